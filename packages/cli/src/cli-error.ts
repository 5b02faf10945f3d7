/** An expected, user-facing failure: printed as one line on stderr, exit code 1 (or given). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
