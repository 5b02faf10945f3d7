// `node-cli admin token create [--replace]`: the dashboard's admin token, created once and
// printed once; only its sha256 is kept (<datadir>/admin.json, mode 0600).
import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';

export function register(program: Command): void {
  const admin = program.command('admin').description('the dashboard admin token');
  admin
    .command('token')
    .description('admin token of the dashboard')
    .command('create')
    .description('create the admin token; prints it once (only its hash is stored)')
    .option('--datadir <dir>', 'datadir of the server', './data')
    .option('--replace', 'replace an existing token (dashboard login sessions end when the server restarts)')
    .option('--json', 'print a JSON object')
    .action(async (opts: { datadir: string; replace?: boolean; json?: boolean }) => {
      const { AdminTokenError, createAdminToken } = await import('@chainnode/dashboard');
      let token: string;
      try {
        token = createAdminToken(opts.datadir, opts.replace === true);
      } catch (err) {
        if (err instanceof AdminTokenError) throw new CliError(err.message);
        throw err;
      }
      if (opts.json) process.stdout.write(`${JSON.stringify({ token })}\n`);
      else {
        process.stdout.write(`${token}\n`);
        process.stderr.write(
          'admin: token created. It is shown only this once; log in to the dashboard with it (serve --dashboard).\n',
        );
      }
    });
}
