import { Command, CommanderError } from 'commander';
import { register as registerSync } from './cmds/sync/index.js';
import { register as registerServe } from './cmds/serve/index.js';
import { register as registerKeys } from './cmds/keys/index.js';
import { register as registerStart } from './cmds/start/index.js';
import { register as registerAdmin } from './cmds/admin/index.js';
import { register as registerDb } from './cmds/db/index.js';
import { ConfigError, RuntimeError } from '@chainnode/runtime/configuration';
import { CliError } from './cli-error.js';

export function buildProgram(): Command {
  const program = new Command('node-cli')
    .description('Self-contained Ethereum chain-data node: import a geth chain export, serve JSON-RPC.')
    .showHelpAfterError()
    .exitOverride();
  registerSync(program);
  registerServe(program);
  registerKeys(program);
  registerStart(program);
  registerAdmin(program);
  registerDb(program);
  return program;
}

/** Runs the CLI. Expected failures (CliError, the runtime's RuntimeError) print one line, never a stack trace. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    // A setting refused (a flag's or the config file's): one line, like a CliError.
    if (err instanceof CliError || err instanceof RuntimeError || err instanceof ConfigError) {
      process.stderr.write(`node-cli: ${err.message}\n`);
      process.exitCode = err instanceof CliError ? err.exitCode : 1;
      return;
    }
    throw err;
  }
}
