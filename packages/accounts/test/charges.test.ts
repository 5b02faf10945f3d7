// Charges, the one door to the ledger: who may spend (unknown, revoked, not on the network), the
// network label of each charge (none for a server's implicit network), a whole charge recorded in
// the ledger and the usage record, and a batch paid for as far as the daily balance goes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Charges,
  DEFAULT_PLANS,
  EmbeddedLedger,
  FileKeyStore,
  KeyRegistry,
  chargeHash,
  createKey,
  revokeKey,
} from '../src/index.js';
import type { Payer, UsageEvent, UsageRecord } from '../src/index.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function setup(): Promise<{
  dir: string;
  keys: KeyRegistry;
  ledger: EmbeddedLedger;
  events: UsageEvent[];
  charges: Charges;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'chainnode-charges-'));
  dirs.push(dir);
  const keys = await KeyRegistry.open(new FileKeyStore(dir));
  const ledger = new EmbeddedLedger(dir);
  const events: UsageEvent[] = [];
  const usage = { record: (e: UsageEvent) => events.push(e) } as unknown as UsageRecord;
  return { dir, keys, ledger, events, charges: new Charges({ config: { plans: DEFAULT_PLANS }, keys, ledger, usage }) };
}

test('admit: unknown and revoked keys, a network the key lacks, and the label of each network', async () => {
  const { dir, keys, ledger, charges } = await setup();
  const { key, record } = await createKey(dir, { plan: 'core', networks: ['mainnet'] });
  const gone = await createKey(dir, { plan: 'core' });
  await revokeKey(dir, gone.key);
  await keys.reload();
  expect(charges.admit('00'.repeat(32))).toEqual({ ok: false, reason: 'revoked', key: undefined });
  expect(charges.admit(gone.record.hash)).toMatchObject({ ok: false, reason: 'revoked' });
  expect(charges.admit(record.hash, { name: 'sepolia', implicit: false })).toMatchObject({
    ok: false,
    reason: 'network',
  });
  expect(charges.admit(record.hash, { name: 'mainnet', implicit: false })).toMatchObject({
    ok: true,
    network: 'mainnet',
  });
  const any = await createKey(dir, { plan: 'core' });
  await keys.reload();
  expect(charges.admit(any.record.hash, { name: 'default', implicit: true })).toMatchObject({
    ok: true,
    network: undefined,
  });
  expect(charges.admit(any.record.hash)).toMatchObject({ ok: true, network: undefined });
  expect(key).not.toBe(any.key);
  keys.stop();
  await ledger.close();
});

test('charge and debitEach: labelled by network, recorded in usage, a batch paid as far as the day allows', async () => {
  const { dir, keys, ledger, events, charges } = await setup();
  const { record } = await createKey(dir, { plan: 'core', dailyCredits: 100 });
  await keys.reload();
  const payer = charges.admit(record.hash, { name: 'mainnet', implicit: false }) as Payer;
  expect(await charges.charge(payer, '(request)', 30, 'rpc')).toBe(true);
  expect(events).toEqual([{ key: record.id, method: '(request)', credits: 30, error: 'rpc' }]);
  // 70 left: of 40 + 20 + 20 the first two are paid, one by one once the whole does not fit.
  const taken = await charges.debitEach(payer, [40, 20, 20], { daily: payer.limits.daily, perSecond: 0 });
  expect(taken).toMatchObject({ paid: 2, credits: 60, refused: { ok: false, reason: 'daily' } });
  for (const d of taken.debits) await charges.settle(d, d.cost);
  expect(await charges.charge(payer, 'x', 20)).toBe(false);
  expect(events).toHaveLength(1); // a refused charge is not recorded
  expect((await ledger.usage(chargeHash(record))).byNetwork).toEqual({ mainnet: 90 });
  keys.stop();
  await ledger.close();
});
