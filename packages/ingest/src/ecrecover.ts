// Sender recovery through libsecp256k1 (the `secp256k1` package's native binding, which falls back
// to its JS implementation where no prebuild loads). Recovering senders with the pure-JS curve of
// @ethereumjs/util was a quarter of the import's CPU; this plugs into the library's own hook
// (Common `customCrypto.ecrecover`) with the same contract as @ethereumjs/util's `ecrecover`:
// (msgHash, v, r, s, chainId?) -> 64-byte uncompressed public key without the 0x04 prefix.
import secp256k1 from 'secp256k1';
import { calculateSigRecovery, concatBytes, setLengthLeft } from '@ethereumjs/util';

export function nativeEcrecover(
  msgHash: Uint8Array,
  v: bigint,
  r: Uint8Array,
  s: Uint8Array,
  chainId?: bigint,
): Uint8Array {
  const recovery = calculateSigRecovery(v, chainId);
  if (recovery !== 0n && recovery !== 1n) throw new Error('Invalid signature v value');
  const signature = concatBytes(setLengthLeft(r, 32), setLengthLeft(s, 32));
  return secp256k1.ecdsaRecover(signature, Number(recovery), msgHash, false).subarray(1);
}
