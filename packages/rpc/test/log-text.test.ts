// formatLogsAscii writes getLogs answers as ASCII bytes directly (core's LogJsonWriter.writeInto); it must be byte for byte the
// JSON.stringify of the formatted logs (the object formatter is checked against geth in
// format.test.ts), for every topic count, empty and long data, several logs per block.
import { LogJsonWriter } from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import { formatLog, formatLogsAscii } from '../src/formatters/log.js';

const formatLogsText = async (logs: LogRecord[], check?: () => void): Promise<string> =>
  Buffer.from(await formatLogsAscii(logs, check)).toString('latin1');

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
      logIndex: [0, 9, 15, 16, 255, 256, 4_095, 65_536, 1_048_575][i % 9] as number, // hex digit counts 1-5
    });
  }
  return out;
}

describe('formatLogsAscii', () => {
  test('equals JSON.stringify of the formatted logs', async () => {
    for (const n of [0, 1, 7, 1_000]) {
      const logs = records(n);
      expect(await formatLogsText(logs)).toBe(JSON.stringify(logs.map(formatLog)));
    }
  });

  test("LogJsonWriter's byteLength and writeInto give write()'s text, log by log", () => {
    const strings = new LogJsonWriter();
    const inBytes = new LogJsonWriter();
    // Values of other lengths than stored ones have: the bytes counted are still the bytes written.
    const odd = {
      ...(records(1)[0] as LogRecord),
      address: bytes(3, 19),
      topics: [bytes(4, 33)],
      transactionHash: bytes(5, 31),
    };
    for (const log of [...records(400), odd]) {
      const n = inBytes.byteLength(log);
      const out = new Uint8Array(n + 4).fill(0x7c);
      expect(inBytes.writeInto(log, out, 2)).toBe(n + 2);
      expect(Buffer.from(out).toString('latin1')).toBe(`||${strings.write(log)}||`);
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
