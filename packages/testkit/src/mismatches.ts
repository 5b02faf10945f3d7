// Differences collected and asserted once. A jest matcher per block, transaction or row (tens of
// thousands in the chain-wide suites) costs more than the checks themselves; comparing with ===
// and keeping only what differs, then `expect(m.first()).toEqual([])`, fails the same way and
// names each difference.

/** What differs, each line `<at>: <what>: <got>, want <expected>`. */
export class Mismatches {
  readonly list: string[] = [];
  /** Where the checks that follow are (a block, a transaction): the lines' prefix. */
  at = '';

  /** Records `what` when `got !== expected`; builds no text otherwise. */
  readonly want = (what: string, got: unknown, expected: unknown): void => {
    if (got !== expected)
      this.list.push(`${this.at === '' ? '' : `${this.at}: `}${what}: ${String(got)}, want ${String(expected)}`);
  };

  /** The first `n` differences (the assertion's message stays readable). */
  first(n = 20): string[] {
    return this.list.slice(0, n);
  }
}
