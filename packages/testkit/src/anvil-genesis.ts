// The geth genesis.json files of the test and bench chains. The Cancun one is what anvil is started
// from wherever a test or bench uses it as an upstream: every fork through Cancun active at genesis,
// and an alloc that anvil then holds exactly (with flags that keep it from funding accounts of its
// own: ../shared/research/follow.md). The pre-merge one (ethash, London at a chosen block) is the
// genesis of the chains this repository executes itself: the fixture chain and the mainnet-shaped one.

/** anvil's four default dev accounts (the first four of its default mnemonic), lowercase. */
export const ANVIL_DEV_ACCOUNTS = [
  '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',
  '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
  '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
  '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
] as const;

/** A genesis `config`: every fork through London at block 0, pre-merge. */
export function londonConfig(chainId = 31337): Record<string, number | boolean> {
  return {
    chainId,
    homesteadBlock: 0,
    eip150Block: 0,
    eip155Block: 0,
    eip158Block: 0,
    byzantiumBlock: 0,
    constantinopleBlock: 0,
    petersburgBlock: 0,
    istanbulBlock: 0,
    berlinBlock: 0,
    londonBlock: 0,
  };
}

/** A genesis `config`: every fork through Cancun at block 0 / time 0, post-merge. */
export function cancunConfig(chainId = 31337): Record<string, number | boolean> {
  return {
    ...londonConfig(chainId),
    mergeNetsplitBlock: 0,
    terminalTotalDifficulty: 0,
    terminalTotalDifficultyPassed: true,
    shanghaiTime: 0,
    cancunTime: 0,
  };
}

/** A genesis `config` of an OP-stack devnet (anvil --network optimism's): every fork from genesis, Prague and Isthmus included. */
export function opDevnetConfig(chainId: number): Record<string, unknown> {
  return {
    ...cancunConfig(chainId),
    pragueTime: 0,
    bedrockBlock: 0,
    regolithTime: 0,
    canyonTime: 0,
    deltaTime: 0,
    ecotoneTime: 0,
    fjordTime: 0,
    graniteTime: 0,
    holoceneTime: 0,
    isthmusTime: 0,
    optimism: { eip1559Elasticity: 6, eip1559Denominator: 50, eip1559DenominatorCanyon: 250 },
  };
}

/** A Cancun genesis.json funding each of `accounts` (0x-prefixed) with `balance` (hex quantity). */
export function cancunGenesis(o: {
  accounts: readonly string[];
  balance: string;
  chainId?: number;
  timestamp?: string;
}): Record<string, unknown> {
  return {
    config: cancunConfig(o.chainId),
    nonce: '0x0',
    timestamp: o.timestamp ?? '0x0',
    extraData: '0x',
    gasLimit: '0x1c9c380',
    difficulty: '0x0',
    mixHash: `0x${'00'.repeat(32)}`,
    coinbase: `0x${'00'.repeat(20)}`,
    baseFeePerGas: '0x3b9aca00',
    alloc: Object.fromEntries(o.accounts.map((a) => [a.slice(2).toLowerCase(), { balance: o.balance }])),
  };
}

/**
 * A pre-merge (ethash) genesis.json: every fork through Berlin at block 0, London at `londonBlock`.
 * Quantities are hex; `baseFeePerGas` is written only when given (London at genesis).
 */
export function preMergeGenesis(o: {
  chainId: number;
  londonBlock: number;
  timestamp: number;
  extraData: string;
  gasLimit: bigint;
  difficulty: bigint;
  alloc: Record<string, unknown>;
  baseFeePerGas?: bigint;
}) {
  // londonConfig's forks in their order, Muir Glacier before Berlin, London where asked.
  const { berlinBlock, londonBlock: _atGenesis, ...throughIstanbul } = londonConfig(o.chainId);
  return {
    config: { ...throughIstanbul, muirGlacierBlock: 0, berlinBlock, londonBlock: o.londonBlock, ethash: {} },
    nonce: '0x0000000000000042',
    timestamp: `0x${o.timestamp.toString(16)}`,
    extraData: o.extraData,
    gasLimit: `0x${o.gasLimit.toString(16)}`,
    difficulty: `0x${o.difficulty.toString(16)}`,
    mixHash: `0x${'00'.repeat(32)}`,
    coinbase: `0x${'00'.repeat(20)}`,
    alloc: o.alloc,
    number: '0x0',
    gasUsed: '0x0',
    parentHash: `0x${'00'.repeat(32)}`,
    ...(o.baseFeePerGas !== undefined ? { baseFeePerGas: `0x${o.baseFeePerGas.toString(16)}` } : {}),
  };
}
