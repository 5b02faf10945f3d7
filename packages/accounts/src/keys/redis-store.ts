// The Redis engine's keys: one JSON value per key in the hash cn:{keys}; every change bumps
// cn:{keys}:ver, which replicas poll (KeyStore.watch).
import type { RedisClient } from '../redis-client.js';
import { validateKeyRecord } from './record.js';
import type { KeyRecord, KeyStore } from './record.js';

export const KEYS_HASH = 'cn:{keys}';
export const KEYS_VERSION = 'cn:{keys}:ver';

/** Keys as one JSON value each in the hash cn:{keys}; changes bump cn:{keys}:ver. */
export class RedisKeyStore implements KeyStore {
  constructor(
    private readonly client: RedisClient,
    private readonly pollMs = 250,
  ) {}

  async list(): Promise<KeyRecord[]> {
    const all = (await this.client.hGetAll(KEYS_HASH)) as Record<string, string>;
    const out: KeyRecord[] = [];
    for (const [hash, json] of Object.entries(all))
      out.push(validateKeyRecord(JSON.parse(json), `redis ${KEYS_HASH} ${hash.slice(0, 12)}`));
    return out;
  }

  async get(hash: string): Promise<KeyRecord | undefined> {
    const json = await this.client.hGet(KEYS_HASH, hash);
    return json === null || json === undefined
      ? undefined
      : validateKeyRecord(JSON.parse(String(json)), `redis ${KEYS_HASH} ${hash.slice(0, 12)}`);
  }

  async put(record: KeyRecord): Promise<void> {
    const rec = validateKeyRecord(record, 'key record');
    await this.client.multi().hSet(KEYS_HASH, rec.hash, JSON.stringify(rec)).incr(KEYS_VERSION).exec();
  }

  watch(onChange: () => void): () => void {
    let last: string | null | undefined;
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.client
        .get(KEYS_VERSION)
        .then((v) => {
          const ver = v === null ? null : String(v);
          // The first poll counts as a change too: a put between the caller's list() and this
          // first poll would otherwise never be seen (its version would become `last`).
          if (ver !== last) onChange();
          last = ver;
        })
        .catch(() => {}) // Redis away: the last key set stays in force
        .finally(() => {
          busy = false;
        });
    }, this.pollMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  async close(): Promise<void> {}
}
