import { openChainStore } from '@chainnode/store';
import { createRpcService } from '@chainnode/rpc';
const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const EMITTER = '0xac71dc6244075b8763fac5367375306e747c761a';
let seed = 9; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const bodies = Array.from({ length: 400 }, (_, i) => { const w = 1 + Math.floor(rnd() * 100); const f = 1 + Math.floor(rnd() * (1600 - w)); return JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_getLogs', params: [{ address: rnd() < 0.5 ? TOKEN : EMITTER, fromBlock: '0x' + f.toString(16), toBlock: '0x' + (f + w - 1).toString(16) }] }); });
const store = await openChainStore(process.argv[2]);
const svc = createRpcService(store, { logWorkers: 0 });
for (let pass = 0; pass < 4; pass++) {
  const t0 = performance.now(); const c0 = process.cpuUsage(); let bytes = 0, logs = 0;
  for (const b of bodies) { const r = await svc.handle(b); const t = r.body ?? r; bytes += t.length; logs += 803; }
  const cpu = process.cpuUsage(c0); const ms = performance.now() - t0;
  console.log(`pass ${pass}: ${(ms * 1000 / bodies.length).toFixed(0)} µs/query, ${(bytes / bodies.length / 1024).toFixed(0)} KB/reply, ${(logs / bodies.length).toFixed(0)} logs/reply, ${((cpu.user + cpu.system) / logs).toFixed(2)} µs cpu/log`);
}
