// eth_subscribe on a server with two networks (docs/networks.md: "every charge records its
// network"): a key subscribes to newHeads on each, each network's follower commits blocks, and
// the key's usage splits the subscription credits (the subscribe calls and every notification)
// by the network they were delivered on, never under the no-network label. A key that loses a
// network stops being notified (and charged) there, as its calls stop being answered.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EVENT_CREDITS, methodCosts } from '@chainnode/rpc';
import { NO_NETWORK, createKey, hashKey, readUsageByNetwork, utcDay } from '@chainnode/accounts';
import { commitOf, sleep, startNetworksSubsServer, WsClient } from './subs-helpers.js';
import type { NetworksSubsServer } from './subs-helpers.js';

let s: NetworksSubsServer;
beforeAll(async () => {
  s = await startNetworksSubsServer(['mainnet', 'sepolia']);
});
afterAll(async () => {
  await s?.stop();
});

test('two networks: subscription credits are recorded under the network that delivered them', async () => {
  const { eth_subscribe: SUB } = methodCosts();
  const { newHeads: HEAD } = EVENT_CREDITS;
  const key = await s.newKey(1_000_000);
  const hash = hashKey(key);
  // Different block counts per network, so a swapped label shows too.
  const blocks = { mainnet: 2, sepolia: 3 };
  const clients: WsClient[] = [];
  for (const [network, count] of Object.entries(blocks)) {
    const c = await WsClient.open(s.ws(network, key));
    clients.push(c);
    const heads = await c.subscribe(['newHeads']);
    s.events.get(network)?.publish(await commitOf(s.store, 1500n, 1500n + BigInt(count - 1)));
    await c.until(() => c.notifications(heads).length === count);
  }
  await sleep(50);
  const expected = { mainnet: SUB + blocks.mainnet * HEAD, sepolia: SUB + blocks.sepolia * HEAD };
  // What the keys CLI and the dashboard read (CreditLedger.usage), and the journal itself.
  const usage = await s.srv.ledger.usage(hash);
  expect(usage.byNetwork).toEqual(expected);
  expect(usage.used).toBe(expected.mainnet + expected.sepolia);
  const journal = readUsageByNetwork(s.datadir, utcDay(Date.now())).get(hash);
  expect(Object.fromEntries(journal ?? [])).toEqual(expected);
  expect(journal?.has(NO_NETWORK)).toBe(false);
  for (const c of clients) c.close();
});

test('a key that loses the network: its next notification there closes the socket, uncharged', async () => {
  const { record, key } = await createKey(s.datadir, { plan: 'core', networks: ['mainnet', 'sepolia'] });
  await s.srv.keys.reload();
  const c = await WsClient.open(s.ws('sepolia', key));
  const heads = await c.subscribe(['newHeads']);
  s.events.get('sepolia')?.publish(await commitOf(s.store, 1510n, 1510n));
  await c.until(() => c.notifications(heads).length === 1);
  await sleep(50);
  const before = (await s.srv.ledger.usage(hashKey(key))).byNetwork;
  // As the dashboard would change it in keys.json.
  const path = join(s.datadir, 'keys.json');
  const file = JSON.parse(await readFile(path, 'utf8')) as { keys: { id: string; networks?: string[] }[] };
  for (const k of file.keys) if (k.id === record.id) k.networks = ['mainnet'];
  await writeFile(`${path}.tmp`, JSON.stringify(file));
  await rename(`${path}.tmp`, path);
  await s.srv.keys.reload();
  s.events.get('sepolia')?.publish(await commitOf(s.store, 1511n, 1511n));
  expect(await c.closed).toEqual({ code: 1008, reason: 'API key does not have access to this network' });
  expect(c.notifications(heads).length).toBe(1);
  expect((await s.srv.ledger.usage(hashKey(key))).byNetwork).toEqual(before);
});
