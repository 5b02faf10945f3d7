// Shared by the fixture tests (not by the generator): locating the committed files and
// splitting a geth export (concatenated RLP blocks) into one byte slice per block.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const FIXTURES_DIR = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface GenesisFile {
  config: Record<string, unknown> & { chainId: number; londonBlock: number };
  nonce: string;
  timestamp: string;
  extraData: string;
  gasLimit: string;
  difficulty: string;
  mixHash: string;
  coinbase: string;
  alloc: Record<string, { balance: string; nonce?: string; code?: string; storage?: Record<string, string> }>;
}

export function readGenesis(dir = FIXTURES_DIR): GenesisFile {
  return JSON.parse(readFileSync(`${dir}/genesis.json`, 'utf8')) as GenesisFile;
}

export function readChain(dir = FIXTURES_DIR): Uint8Array {
  return new Uint8Array(readFileSync(`${dir}/chain.rlp`));
}

/** Splits concatenated top-level RLP lists, reading only the length prefixes. */
export function splitRlpItems(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const b0 = buf[pos]!;
    if (b0 < 0xc0) throw new Error(`offset ${pos}: expected an RLP list (block), got prefix 0x${b0.toString(16)}`);
    let headerLen: number;
    let payloadLen: number;
    if (b0 <= 0xf7) {
      headerLen = 1;
      payloadLen = b0 - 0xc0;
    } else {
      const lenOfLen = b0 - 0xf7;
      headerLen = 1 + lenOfLen;
      payloadLen = 0;
      for (let i = 1; i <= lenOfLen; i++) payloadLen = payloadLen * 256 + buf[pos + i]!;
    }
    const end = pos + headerLen + payloadLen;
    if (end > buf.length) throw new Error(`offset ${pos}: block runs past the end of the file`);
    out.push(buf.subarray(pos, end));
    pos = end;
  }
  return out;
}

export function hexToBigInt(hex: string): bigint {
  return BigInt(hex);
}

/**
 * Runs a compiled helper (`scripts/dist/test/<name>.js`) in a child node process and parses the
 * JSON it prints. CPU-heavy fixture checks run there rather than inside jest's module sandbox,
 * where the same code is about twice slower. A non-zero exit fails with the child's stderr.
 */
export function runHelper<T>(name: string, args: readonly string[]): Promise<T> {
  const script = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (c: string) => (stdout += c));
    child.stderr.on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`${name} exited with ${code}: ${stderr.trim()}`));
        return;
      }
      try {
        resolvePromise(JSON.parse(stdout) as T);
      } catch {
        reject(new Error(`${name} printed no JSON report: ${stdout.slice(0, 200)} ${stderr.slice(0, 500)}`));
      }
    });
  });
}
