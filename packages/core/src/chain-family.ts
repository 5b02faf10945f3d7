// Which rule family a chain follows, read from its genesis.json: op-geth's format is geth's with a
// `config.optimism` block (eip1559Elasticity, eip1559Denominator, eip1559DenominatorCanyon) beside
// the OP fork times (bedrockBlock, regolithTime, canyonTime, ...). Nothing else is needed to tell
// an OP-stack chain: its deposit transactions (type 0x7e) and deposit receipt fields follow.

export type ChainFamily = 'ethereum' | 'optimism';

/** 'optimism' when the genesis.json's config has an `optimism` object, else 'ethereum'. */
export function chainFamilyOf(genesisJson: unknown): ChainFamily {
  if (typeof genesisJson !== 'object' || genesisJson === null) return 'ethereum';
  const config = (genesisJson as { config?: unknown }).config;
  if (typeof config !== 'object' || config === null) return 'ethereum';
  const optimism = (config as { optimism?: unknown }).optimism;
  return typeof optimism === 'object' && optimism !== null && !Array.isArray(optimism) ? 'optimism' : 'ethereum';
}

/** The OP-stack forks whose activation time a genesis.json names (`config.<fork>Time`). */
export type OpStackFork = 'canyon' | 'ecotone' | 'fjord' | 'granite' | 'holocene' | 'isthmus' | 'jovian';

/** Whether an OP-stack chain's `fork` is active at block time `timestamp` (false on an Ethereum chain). */
export function opForkActive(genesisJson: unknown, fork: OpStackFork, timestamp: bigint): boolean {
  if (chainFamilyOf(genesisJson) !== 'optimism') return false;
  const t = (genesisJson as { config: Record<string, unknown> }).config[`${fork}Time`];
  if (typeof t === 'number') return BigInt(t) <= timestamp;
  if (typeof t === 'string' && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(t)) return BigInt(t) <= timestamp;
  return false;
}
