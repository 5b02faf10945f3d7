// The admin listener over TLS: the session cookie is marked Secure, and the same-origin check
// uses the https scheme. The certificate is a throwaway self-signed one made by openssl.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PLANS, EmbeddedLedger, EmbeddedUsage, FileKeyStore, KeyManager } from '@chainnode/accounts';
import { createAdminToken, startDashboard } from '../src/index.js';

const OPENSSL = '/usr/bin/openssl';
const maybe = existsSync(OPENSSL) ? test : test.skip;
if (!existsSync(OPENSSL)) console.log('dashboard TLS test skipped: no openssl to make a certificate');

function post(
  port: number,
  path: string,
  body: unknown,
  origin: string,
): Promise<{ status: number; setCookie: string[] }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json', origin, 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookie: res.headers['set-cookie'] ?? [] }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

maybe('over TLS the session cookie is Secure; an http:// Origin is cross-origin', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chainnode-dash-tls-'));
  const usage = new EmbeddedUsage(dir);
  const ledger = new EmbeddedLedger(dir);
  try {
    execFileSync(
      OPENSSL,
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const token = createAdminToken(dir);
    const keys = new KeyManager({
      keys: new FileKeyStore(dir),
      config: { plans: DEFAULT_PLANS },
      usage,
      balance: (h) => ledger.usage(h),
    });
    const dash = await startDashboard({
      datadir: dir,
      keys,
      host: '127.0.0.1',
      port: 0,
      tls: { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') },
    });
    try {
      expect(dash.url).toMatch(/^https:\/\//);
      const origin = `https://127.0.0.1:${dash.port}`;
      expect((await post(dash.port, '/api/login', { token }, `http://127.0.0.1:${dash.port}`)).status).toBe(403);
      const ok = await post(dash.port, '/api/login', { token }, origin);
      expect(ok.status).toBe(200);
      expect(ok.setCookie[0]).toMatch(/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
    } finally {
      await dash.close();
    }
  } finally {
    await usage.close();
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
