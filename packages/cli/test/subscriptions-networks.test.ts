// eth_subscribe on a server with two networks (docs/networks.md: "every charge records its
// network"): a key subscribes to newHeads on each, each network's follower commits blocks, and
// the key's usage splits the subscription credits (the subscribe calls and every notification)
// by the network they were delivered on, never under the no-network label.
import { EVENT_CREDITS, methodCosts } from '@chainnode/rpc';
import { NO_NETWORK, hashKey, readUsageByNetwork, utcDay } from '@chainnode/accounts';
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
