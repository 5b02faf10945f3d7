// The port hold behind `--threads N --port 0`: while held, no other process's plain bind (no
// SO_REUSEPORT, as anvil's or another test's) can take the port; a uWS listener on the explicit
// port (an app thread) binds beside it; after release the app thread's socket still serves.
import { createServer } from 'node:net';
import uWS from 'uWebSockets.js';
import { holdFreePort } from '../src/index.js';

function plainBind(port: number): Promise<'bound' | string> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve('bound')));
  });
}

test('a held port refuses a plain bind, admits an SO_REUSEPORT listener, and serves through it after release', async () => {
  const hold = await holdFreePort('127.0.0.1');
  expect(hold.port).toBeGreaterThan(0);
  expect(await plainBind(hold.port)).toBe('EADDRINUSE');

  const app = uWS.App().get('/*', (res) => {
    res.end('thread');
  });
  const sock = await new Promise<uWS.us_listen_socket | false>((r) => app.listen('127.0.0.1', hold.port, r));
  expect(sock).not.toBe(false);
  hold.release();
  try {
    // Only the thread's socket is left: every connection reaches it.
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`http://127.0.0.1:${hold.port}/`, { headers: { connection: 'close' } });
      expect(await res.text()).toBe('thread');
    }
    expect(await plainBind(hold.port)).toBe('EADDRINUSE');
  } finally {
    if (sock) uWS.us_listen_socket_close(sock);
  }
  expect(await plainBind(hold.port)).toBe('bound');
});
