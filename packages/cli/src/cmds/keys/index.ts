import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';

// Placeholder until the issue that owns `keys` fills it in.
export function register(program: Command): void {
  program
    .command('keys')
    .description('keys (not implemented yet)')
    .action(() => {
      throw new CliError('keys is not implemented yet');
    });
}
