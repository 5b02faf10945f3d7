// formatLogsText writes getLogs answers as text directly; it must be byte for byte the
// JSON.stringify of the formatted logs (the object formatter is checked against geth in
// format.test.ts), for every topic count, empty and long data, several logs per block.
import type { LogRecord } from '@chainnode/core';
import { formatLog, formatLogsText } from '../src/formatters/log.js';

const bytes = (seed: number, n: number): Uint8Array =>
  Uint8Array.from({ length: n }, (_, i) => (seed * 31 + i * 7) & 0xff);

function records(n: number): LogRecord[] {
  const out: LogRecord[] = [];
  for (let i = 0; i < n; i++) {
    const block = 1_000_000n + BigInt(Math.floor(i / 3)) * 2n ** 33n; // several logs per block, numbers past 2^32
    out.push({
      address: bytes(i, 20),
      topics: Array.from({ length: i % 5 }, (_, t) => bytes(i + t, 32)),
      data: bytes(i, [0, 1, 32, 300][i % 4] as number),
      blockNumber: block,
      blockHash: bytes(Number(block % 251n), 32),
      blockTimestamp: 1_700_000_000n + block,
      transactionHash: bytes(i >> 1, 32),
      transactionIndex: i >> 1,
      logIndex: i % 3,
    });
  }
  return out;
}

describe('formatLogsText', () => {
  test('equals JSON.stringify of the formatted logs', async () => {
    for (const n of [0, 1, 7, 1_000]) {
      const logs = records(n);
      expect(await formatLogsText(logs)).toBe(JSON.stringify(logs.map(formatLog)));
    }
  });

  test('a failing check stops a long answer between slices', async () => {
    const logs = records(60_000);
    let checks = 0;
    const stop = new Error('past the deadline');
    await expect(
      formatLogsText(logs, () => {
        checks++;
        throw stop;
      }),
    ).rejects.toBe(stop);
    expect(checks).toBe(1);
  });
});
