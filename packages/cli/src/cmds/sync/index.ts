import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';

// Placeholder until the issue that owns `sync` fills it in.
export function register(program: Command): void {
  program
    .command('sync')
    .description('sync (not implemented yet)')
    .action(() => {
      throw new CliError('sync is not implemented yet');
    });
}
