import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';

// Placeholder until the issue that owns `start` fills it in.
export function register(program: Command): void {
  program
    .command('start')
    .description('start (not implemented yet)')
    .action(() => {
      throw new CliError('start is not implemented yet');
    });
}
