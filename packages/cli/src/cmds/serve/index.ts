// `node-cli serve [--datadir ./data] [--host 127.0.0.1] [--port 8545] [--config <file>]
//  [--failover-url <url>] [--metrics-port <port>] [--ledger redis://host:port[/db]] [--ledger-failure open|closed]
//  [--follow <URL> [--genesis <genesis.json>] [--reorg-depth N] [--poll-ms N]]
//  [--network <name>=<datadir>[,follow=<URL>]]... [--default-network <name>] [--threads N|cores]`: JSON-RPC over
//  HTTP and WebSocket, one or several networks.
import { Option } from 'commander';
import type { Command } from 'commander';
import {
  ConfigError,
  SERVER_FIELDS,
  flagName,
  flagText,
  flagsFromFile,
  readConfigFile,
  runtimeConfigOf,
} from '@chainnode/runtime/configuration';
import type { ConfigField, ServeFlags, ServerConfig } from '@chainnode/runtime/configuration';
import { CliError } from '../../cli-error.js';

/** The fields of server.json that are flags of serve (of start too unless serveOnly), in schema order. */
function flagFields(serveOnly: boolean): [keyof ServerConfig, ConfigField<unknown>][] {
  return (Object.entries(SERVER_FIELDS) as [keyof ServerConfig, ConfigField<unknown>][]).filter(
    ([, f]) => f.flag !== undefined && (f.flag.serveOnly === true) === serveOnly,
  );
}

/**
 * The commander option of a server.json field: its flag, its doc line, its default as the flag's
 * text (none when the flag's absence means something of its own, as --metrics-port's).
 */
export function fieldOption(name: string, f: ConfigField<unknown>): Option {
  const flag = f.flag ?? {};
  const plain = (t: string): string => t.replace(/`/g, '');
  const shown = f.default === undefined || f.default === false ? undefined : flagText(f, f.default);
  const doc = shown === undefined && f.defaultText !== undefined ? `${f.doc} (default: ${f.defaultText})` : f.doc;
  const o = new Option(`${flagName(name)}${flag.arg !== undefined ? ` <${flag.arg}>` : ''}`, plain(doc));
  if (typeof shown === 'string') o.default(shown);
  if (flag.hidden === true) o.hideHelp();
  return o;
}

function addFieldOptions(cmd: Command, serveOnly: boolean): Command {
  for (const [name, f] of flagFields(serveOnly)) cmd.addOption(fieldOption(name, f));
  return cmd;
}

/**
 * `opts` with what the config file sets for every flag not given on the command line: flag >
 * file > default (the defaults are the options' own, from the same schema).
 */
export function withConfigFile<O extends { datadir: string; config?: string }>(opts: O, cmd: Command): O {
  let file: ReturnType<typeof readConfigFile>;
  try {
    file = readConfigFile(opts.datadir, opts.config);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
  const out: Record<string, unknown> = { ...opts };
  for (const [name, text] of flagsFromFile(file)) {
    const source = cmd.getOptionValueSource(name);
    // Only the options this command has (start has no follow flags: the file's are ignored there).
    if (!cmd.options.some((o) => o.attributeName() === name)) continue;
    if (source === 'cli' || source === 'env') continue;
    out[name] = text;
  }
  return out as O;
}

/** The serving options, declared once for `serve` and `start`. */
export function withServeOptions(cmd: Command): Command {
  return addFieldOptions(
    cmd
      .option('--datadir <dir>', 'datadir holding the imported chain, keys.json and usage/', './data')
      .option(
        '--config <file>',
        'server config (plans, limits, and any flag of serve by its field name); default <datadir>/server.json if present',
      ),
    false,
  );
}

export function register(program: Command): void {
  const cmd = withServeOptions(
    program
      .command('serve')
      .description('serve the imported chain: HTTP POST /v3/<API_KEY>, WebSocket /ws/v3/<API_KEY>, GET /health'),
  );
  addFieldOptions(cmd, true)
    .option(
      '--network <name>=<datadir>[,follow=<URL>[,ingest=replicate][,history=<URL>][,ws=<URL>]]',
      "serve this network, chosen by the request Host <name>.<anything> (repeatable; replaces the config's networks); --datadir then holds only keys, usage and config",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .action(async (opts: ServeFlags, command: Command) => {
      const config = runtimeConfigOf(withConfigFile(opts, command));
      // The runtime loads only once the settings are checked: a refused flag costs no more than its check.
      const [{ runRuntime }, { printBanner }] = await Promise.all([
        import('@chainnode/runtime'),
        import('./banner.js'),
      ]);
      process.exit(await runRuntime(config, { onListening: (l) => printBanner(config, l) }));
    });
}
