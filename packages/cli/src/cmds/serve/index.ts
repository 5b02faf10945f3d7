import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';

// Placeholder until the issue that owns `serve` fills it in.
export function register(program: Command): void {
  program
    .command('serve')
    .description('serve (not implemented yet)')
    .action(() => {
      throw new CliError('serve is not implemented yet');
    });
}
