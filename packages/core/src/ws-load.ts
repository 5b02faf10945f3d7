// The `ws` client, loaded with the first WebSocket upstream: a process without one (every CLI
// command, a server that follows nothing or follows over HTTP) never loads it.
import type WebSocket from 'ws';

let wsModule: Promise<typeof WebSocket> | undefined;

/** The `ws` WebSocket class (loaded once, on the first call). */
export function loadWebSocket(): Promise<typeof WebSocket> {
  wsModule ??= import('ws').then((m) => m.default);
  return wsModule;
}
