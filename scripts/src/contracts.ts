// The fixture contracts, compiled with the pinned solc (0.8.30, evmVersion berlin so the code
// runs before London and contains no PUSH0). Compilation is deterministic for fixed sources and
// settings, and the metadata hash is switched off so the bytecode does not depend on anything
// but the source text below.
import { compiledContract, compileSolidity } from '@chainnode/testkit';
import { Interface } from 'ethers';

export const SOLIDITY_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// ERC-20-like token. Storage: slot 0 balanceOf, slot 1 allowance, slot 2 totalSupply.
contract FixtureToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 have = balanceOf[msg.sender];
        require(have >= value, "FixtureToken: insufficient balance");
        balanceOf[msg.sender] = have - value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }

    function batchTransfer(address[] calldata to, uint256 value) external {
        uint256 total = value * to.length;
        uint256 have = balanceOf[msg.sender];
        require(have >= total, "FixtureToken: insufficient balance");
        balanceOf[msg.sender] = have - total;
        for (uint256 i = 0; i < to.length; ++i) {
            balanceOf[to[i]] += value;
            emit Transfer(msg.sender, to[i], value);
        }
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "FixtureToken: insufficient allowance");
        uint256 have = balanceOf[from];
        require(have >= value, "FixtureToken: insufficient balance");
        allowance[from][msg.sender] = allowed - value;
        balanceOf[from] = have - value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
        return true;
    }
}

/// The hot contract: emits logs with 0..4 topics (anonymous events included) and data of
/// 0 to 320 bytes. Storage: slot 0 emitted (number of logs emitted so far).
contract EventEmitter {
    uint256 public emitted;

    event Anon0() anonymous;
    event AnonData(bytes data) anonymous;
    event Ping();
    event Note(bytes data);
    event Indexed1(uint256 indexed a, bytes data);
    event Indexed2(uint256 indexed a, address indexed b, uint256 value);
    event Indexed3(uint256 indexed a, address indexed b, bytes32 indexed c, bytes data);
    event Anon4(bytes32 indexed a, bytes32 indexed b, bytes32 indexed c, bytes32 indexed d) anonymous;

    function _emitKind(uint256 kind, uint256 k, bytes calldata d) internal {
        if (kind == 0) emit Anon0();
        else if (kind == 1) emit AnonData(d);
        else if (kind == 2) emit Ping();
        else if (kind == 3) emit Note(d);
        else if (kind == 4) emit Indexed1(k % 1000, d);
        else if (kind == 5) emit Indexed2(k % 1000, msg.sender, k);
        else if (kind == 6) emit Indexed3(k % 1000, msg.sender, bytes32(k), d);
        else emit Anon4(bytes32(k), bytes32(k >> 1), bytes32(k >> 2), bytes32(k >> 3));
    }

    /// Emits n logs whose kinds and data slices follow keccak(seed, i).
    function burst(uint256 n, uint256 seed, bytes calldata data) public {
        for (uint256 i = 0; i < n; ++i) {
            uint256 k = uint256(keccak256(abi.encode(seed, i)));
            _emitKind(k % 8, k, data[:(k >> 8) % (data.length + 1)]);
        }
        emitted += n;
    }

    /// One log of every kind, each with the full data.
    function emitAll(uint256 seed, bytes calldata data) external {
        for (uint256 kind = 0; kind < 8; ++kind) {
            _emitKind(kind, uint256(keccak256(abi.encode(seed, kind))), data);
        }
        emitted += 8;
    }

    /// Emits like burst, then reverts: the receipt has status 0 and no logs.
    function burstThenRevert(uint256 n, uint256 seed, bytes calldata data) external {
        burst(n, seed, data);
        revert("EventEmitter: reverted after emitting");
    }
}

/// Plain slots and a nested mapping. Storage: slot 0 counter, slot 1 lastCaller,
/// slot 2 lastValue, slot 3 entries (mapping(address => mapping(uint256 => uint256))).
contract Registry {
    uint256 public counter;
    address public lastCaller;
    uint256 public lastValue;
    mapping(address => mapping(uint256 => uint256)) public entries;

    function store(uint256 key, uint256 value) external {
        counter += 1;
        lastCaller = msg.sender;
        lastValue = value;
        entries[msg.sender][key] = value;
    }

    function fail(uint256 code) external pure {
        revert(code % 2 == 0 ? "Registry: even failure" : "Registry: odd failure");
    }

    /// Executes INVALID: the call consumes all the gas it was given (used to fill blocks).
    function burn() external pure {
        assembly {
            invalid()
        }
    }
}

/// A rare emitter; many copies are deployed and each is called only a few times.
/// Storage: slot 0 beeps.
contract Beacon {
    uint256 public immutable id;
    uint256 public beeps;

    event Beep(address indexed sender, uint256 indexed id, uint256 value);

    constructor(uint256 id_) {
        id = id_;
    }

    function beep(uint256 value) external {
        beeps += 1;
        emit Beep(msg.sender, id, value);
    }
}
`;

export interface CompiledContract {
  readonly name: string;
  readonly bytecode: Uint8Array;
  readonly iface: Interface;
}

export interface CompiledContracts {
  readonly token: CompiledContract;
  readonly emitter: CompiledContract;
  readonly registry: CompiledContract;
  readonly beacon: CompiledContract;
  readonly solcVersion: string;
}

export function compileContracts(): CompiledContracts {
  const out = compileSolidity({
    file: 'Fixtures.sol',
    source: SOLIDITY_SOURCE,
    evmVersion: 'berlin',
    reproducible: true,
    output: 'bytecode',
  });
  const get = (name: string): CompiledContract => {
    const c = compiledContract(out, name);
    return { name, bytecode: Uint8Array.from(Buffer.from(c.code, 'hex')), iface: new Interface(c.abi as never) };
  };
  return {
    token: get('FixtureToken'),
    emitter: get('EventEmitter'),
    registry: get('Registry'),
    beacon: get('Beacon'),
    solcVersion: out.solcVersion,
  };
}

/** ABI-encodes a call; `args` follow the Solidity signature. */
export function encodeCall(c: CompiledContract, fn: string, args: readonly unknown[]): Uint8Array {
  return hexBytes(c.iface.encodeFunctionData(fn, args as unknown[]));
}

/** Creation code with ABI-encoded constructor arguments appended. */
export function creationCode(c: CompiledContract, args: readonly unknown[]): Uint8Array {
  const encoded = hexBytes(c.iface.encodeDeploy(args as unknown[]));
  const out = new Uint8Array(c.bytecode.length + encoded.length);
  out.set(c.bytecode, 0);
  out.set(encoded, c.bytecode.length);
  return out;
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.startsWith('0x') ? hex.slice(2) : hex, 'hex'));
}
