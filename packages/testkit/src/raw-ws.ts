// A WebSocket client written by hand on a raw TCP socket, for tests that must control reading:
// a client that never reads its socket (until the test says so), then parses what arrived up to
// the server's close frame. Product-independent (RFC 6455 framing only).
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { Socket } from 'node:net';

/** A masked client text frame. */
export function textFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const n = payload.length;
  const head =
    n < 126
      ? Buffer.from([0x81, 0x80 | n])
      : n < 65536
        ? Buffer.from([0x81, 0x80 | 126, n >> 8, n & 0xff])
        : Buffer.concat([
            Buffer.from([0x81, 0x80 | 127]),
            (() => {
              const b = Buffer.alloc(8);
              b.writeBigUInt64BE(BigInt(n));
              return b;
            })(),
          ]);
  const mask = randomBytes(4);
  const masked = Buffer.alloc(n);
  for (let i = 0; i < n; i++) masked[i] = payload[i]! ^ mask[i & 3]!;
  return Buffer.concat([head, mask, masked]);
}

/** A WebSocket opened by hand on a raw TCP socket, so that the test decides when (if ever) to read. */
export function rawWebSocket(port: number, path: string): Promise<{ socket: Socket; pending: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    const onData = (d: Buffer): void => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      const head = got.subarray(0, end).toString('latin1');
      if (head.startsWith('HTTP/1.1 101')) resolve({ socket, pending: got.subarray(end + 4) });
      else reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
    };
    socket.on('data', onData);
  });
}

/** Reads the socket from now on until a close frame arrives: its code and reason. */
export function readUntilClose(
  socket: Socket,
  pending: Buffer,
  timeoutMs: number,
): Promise<{ code: number; reason: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    let buf = pending;
    let bytes = 0;
    const timer = setTimeout(
      () => reject(new Error(`no close frame after ${timeoutMs} ms (${bytes} bytes read)`)),
      timeoutMs,
    );
    const parse = (): void => {
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0]! & 0x0f;
        let len = buf[1]! & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        if (buf.length < off + len) return;
        const payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        if (opcode === 8) {
          clearTimeout(timer);
          socket.destroy();
          resolve({
            code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005,
            reason: payload.subarray(2).toString('utf8'),
            bytes,
          });
          return;
        }
      }
    };
    socket.on('data', (d: Buffer) => {
      bytes += d.length;
      buf = Buffer.concat([buf, d]);
      parse();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`socket closed without a close frame (${bytes} bytes read)`));
    });
    socket.resume();
    parse();
  });
}
