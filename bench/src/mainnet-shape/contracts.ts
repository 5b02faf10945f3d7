// The contracts of the mainnet-shaped chain, compiled with the pinned solc (a dev dependency;
// evmVersion london, the chain's rules, so no PUSH0; metadata hash off, so the bytecode depends
// only on the source text below). They are placed in the genesis alloc with their storage (token
// balances, pool reserves, allowances to the router), so block 1 already looks like a block of a
// busy chain. Storage layouts are fixed by declaration order and written by the generator:
//   Token:  slot 0 balanceOf, slot 1 allowance, slot 2 totalSupply
//   Pair:   slot 0 token0, slot 1 token1, slot 2 reserve0, slot 3 reserve1, slot 4-5 price
//           accumulators, slot 6 last timestamp
//   Nft:    slot 0 ownerOf, slot 1 balanceOf, slot 2 nextId
//   Router: no storage
import { compiledContract, compileSolidity } from '@chainnode/testkit';
import { Interface } from 'ethers';

export const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// ERC-20. An allowance of type(uint256).max is never decremented (as WETH and OpenZeppelin).
contract Token {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= value, "Token: allowance");
            allowance[from][msg.sender] = allowed - value;
        }
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) internal {
        uint256 have = balanceOf[from];
        require(have >= value, "Token: balance");
        unchecked {
            balanceOf[from] = have - value;
        }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}

/// Constant-product pool (x * y = k, 0.3% fee), Uniswap V2's swap: the input is sent to the
/// pool first, the output is sent optimistically, then the balances must keep k.
contract Pair {
    address public token0;
    address public token1;
    uint256 public reserve0;
    uint256 public reserve1;
    uint256 public price0CumulativeLast;
    uint256 public price1CumulativeLast;
    uint256 public blockTimestampLast;

    event Sync(uint256 reserve0, uint256 reserve1);
    event Swap(
        address indexed sender,
        uint256 amount0In,
        uint256 amount1In,
        uint256 amount0Out,
        uint256 amount1Out,
        address indexed to
    );

    function swap(uint256 amount0Out, uint256 amount1Out, address to) external {
        require(amount0Out > 0 || amount1Out > 0, "Pair: output");
        uint256 r0 = reserve0;
        uint256 r1 = reserve1;
        require(amount0Out < r0 && amount1Out < r1, "Pair: liquidity");
        if (amount0Out > 0) Token(token0).transfer(to, amount0Out);
        if (amount1Out > 0) Token(token1).transfer(to, amount1Out);
        uint256 b0 = Token(token0).balanceOf(address(this));
        uint256 b1 = Token(token1).balanceOf(address(this));
        uint256 in0 = b0 > r0 - amount0Out ? b0 - (r0 - amount0Out) : 0;
        uint256 in1 = b1 > r1 - amount1Out ? b1 - (r1 - amount1Out) : 0;
        require(in0 > 0 || in1 > 0, "Pair: input");
        require((b0 * 1000 - in0 * 3) * (b1 * 1000 - in1 * 3) >= r0 * r1 * 1000000, "Pair: k");
        uint256 elapsed = block.timestamp - blockTimestampLast;
        if (elapsed > 0) {
            // The price oracle as Uniswap V2 keeps it (18-decimal fixed point here).
            unchecked {
                price0CumulativeLast += ((r1 * 1e18) / r0) * elapsed;
                price1CumulativeLast += ((r0 * 1e18) / r1) * elapsed;
            }
            blockTimestampLast = block.timestamp;
        }
        reserve0 = b0;
        reserve1 = b1;
        emit Sync(b0, b1);
        emit Swap(msg.sender, in0, in1, amount0Out, amount1Out, to);
    }
}

/// The swap router: exact-input swaps through one pool, and multicall (each call a delegatecall
/// to itself, so msg.sender stays the caller), as routers on mainnet batch their steps.
contract Router {
    function swapExactIn(address pair, bool zeroForOne, uint256 amountIn, uint256 minOut, address to)
        public
        returns (uint256 out)
    {
        Pair p = Pair(pair);
        uint256 r0 = p.reserve0();
        uint256 r1 = p.reserve1();
        (uint256 rIn, uint256 rOut) = zeroForOne ? (r0, r1) : (r1, r0);
        uint256 inWithFee = amountIn * 997;
        out = (inWithFee * rOut) / (rIn * 1000 + inWithFee);
        require(out >= minOut, "Router: slippage");
        Token(zeroForOne ? p.token0() : p.token1()).transferFrom(msg.sender, pair, amountIn);
        if (zeroForOne) p.swap(0, out, to);
        else p.swap(out, 0, to);
    }

    function multicall(bytes[] calldata data) external {
        for (uint256 i = 0; i < data.length; ++i) {
            (bool ok, ) = address(this).delegatecall(data[i]);
            require(ok, "Router: call failed");
        }
    }
}

/// ERC-721 mints and transfers (no approvals, no safe-transfer callbacks).
contract Nft {
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    uint256 public nextId;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    function mint(address to, uint256 n) external {
        uint256 id = nextId;
        for (uint256 i = 0; i < n; ++i) {
            ownerOf[id] = to;
            emit Transfer(address(0), to, id);
            ++id;
        }
        balanceOf[to] += n;
        nextId = id;
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && msg.sender == from, "Nft: not owner");
        ownerOf[id] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, id);
    }
}
`;

export interface Compiled {
  readonly runtime: Uint8Array;
  readonly iface: Interface;
}

export interface MainnetContracts {
  readonly token: Compiled;
  readonly pair: Compiled;
  readonly router: Compiled;
  readonly nft: Compiled;
  readonly solcVersion: string;
}

let compiled: MainnetContracts | undefined;

export function compileMainnetContracts(): MainnetContracts {
  if (compiled !== undefined) return compiled;
  const out = compileSolidity({
    file: 'MainnetShape.sol',
    source: SOURCE,
    evmVersion: 'london',
    reproducible: true,
    output: 'deployedBytecode',
  });
  const get = (name: string): Compiled => {
    const c = compiledContract(out, name);
    return { runtime: Uint8Array.from(Buffer.from(c.code, 'hex')), iface: new Interface(c.abi as never) };
  };
  compiled = {
    token: get('Token'),
    pair: get('Pair'),
    router: get('Router'),
    nft: get('Nft'),
    solcVersion: out.solcVersion,
  };
  return compiled;
}

/** ABI-encodes a call; `args` follow the Solidity signature. */
export function encodeCall(c: Compiled, fn: string, args: readonly unknown[]): Uint8Array {
  const hex = c.iface.encodeFunctionData(fn, args as unknown[]);
  return Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));
}
