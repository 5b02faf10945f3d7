// A port for app threads that share one with SO_REUSEPORT (runtime's `--threads N` on `--port 0`).
// uWS sets SO_REUSEPORT only on an explicit port, so a free one is found first; between finding it
// and the first thread's bind, another process could take it (seen on busy machines). So the port
// is found and then held here, by a listen socket of this thread's own uWS with SO_REUSEPORT: the
// app threads bind beside the hold, and the hold is released once they listen. A port taken in the
// instant between the probe and the hold is retried with another.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import uWS from 'uWebSockets.js';

export interface PortHold {
  readonly port: number;
  /** Closes the hold; the app threads' sockets stay. */
  release(): void;
}

function probeFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Finds a free port on `host` and holds it (SO_REUSEPORT) until `release()`. */
export async function holdFreePort(host: string, attempts = 8): Promise<PortHold> {
  for (let i = 0; i < attempts; i++) {
    const port = await probeFreePort(host);
    const app = uWS.App();
    const sock = await new Promise<uWS.us_listen_socket | false>((resolve) => app.listen(host, port, resolve));
    if (sock) return { port, release: () => uWS.us_listen_socket_close(sock) };
  }
  throw new Error(`cannot find a free port on ${host} (${attempts} ports taken between probe and bind)`);
}
