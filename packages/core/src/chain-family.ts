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
