// SPDX-License-Identifier: MIT
// The tracers' workload (trace-workload.ts sends it to anvil; the test compiles this file).
pragma solidity 0.8.30;

error Refused(uint256 code, address who);

contract Child {
    event Born(address indexed parent, uint256 value);
    uint256 public v;
    constructor(uint256 x) payable {
        v = x;
        emit Born(msg.sender, msg.value);
    }
    function ping(uint256 x) external payable returns (uint256) {
        emit Born(msg.sender, x);
        return x + v;
    }
}

contract Doomed {
    constructor(address payable heir) payable {
        selfdestruct(heir);
    }
}

contract Failing {
    constructor() {
        revert("cannot build");
    }
}

contract Lib {
    uint256 public v;
    event Delegated(address self, uint256 x);
    function set(uint256 x) external {
        v = x;
        emit Delegated(address(this), x);
    }
}

contract Hub {
    uint256 public stored;
    uint256 transient lock;
    event Step(uint256 indexed depth, uint256 value);
    event Caught(string reason);
    event CaughtData(bytes data);
    event Made(address a, address b);

    /** A slot read empty stays in anvil's storage trie as a zero leaf (geth has none): not empty here. */
    constructor() {
        stored = 1;
    }

    receive() external payable {}

    function nested(Hub other, uint256 depth) external payable returns (uint256) {
        emit Step(depth, msg.value);
        if (depth == 0) return 1;
        return other.nested{value: msg.value / 2}(this, depth - 1) + 1;
    }

    function peek(uint256 x) external view returns (uint256) {
        return x * 2 + stored;
    }

    function mixed(Hub other, Lib lib, uint256 x) external returns (bytes32) {
        uint256 p = other.peek(x);
        (bool ok, ) = address(lib).delegatecall(abi.encodeCall(Lib.set, (p + 1)));
        require(ok);
        bytes32 h = sha256(abi.encode(p));
        address r = ecrecover(h, 27, bytes32(uint256(1)), bytes32(uint256(2)));
        (bool ok2, bytes memory echo) = address(4).staticcall(abi.encode(h, r));
        require(ok2);
        return keccak256(echo);
    }

    function make(uint256 x, bytes32 salt) external payable returns (uint256) {
        Child a = new Child{value: msg.value / 2}(x);
        Child b = new Child{salt: salt}(x + 1);
        emit Made(address(a), address(b));
        return a.ping(x) + b.ping{value: 1}(x);
    }

    function fail(uint256 x) external returns (uint256) {
        emit Step(x, 0);
        stored = x;
        require(x > 100, "too small");
        return x;
    }

    function tryCatch(Hub other, bytes32 salt) external returns (uint256) {
        uint256 n;
        try other.fail(7) returns (uint256 v) {
            n = v;
        } catch Error(string memory reason) {
            emit Caught(reason);
        }
        try new Failing{salt: salt}() returns (Failing f) {
            n += uint160(address(f));
        } catch (bytes memory data) {
            emit CaughtData(data);
        }
        try this.refuse(3) {} catch (bytes memory data) {
            emit CaughtData(data);
        }
        return n + 1;
    }

    function boom(uint256 x) external {
        emit Step(x, 1);
        stored = x;
        require(x == 0, "boom");
    }

    function refuse(uint256 code) public {
        emit Step(code, 2);
        revert Refused(code, msg.sender);
    }

    function doom(bytes32 salt, address payable heir) external payable returns (address) {
        Doomed d = new Doomed{salt: salt, value: msg.value}(heir);
        return address(d);
    }

    function transient(uint256 x) external returns (uint256) {
        lock = x;
        uint256 seen = this.readLock();
        assembly {
            tstore(1, add(seen, 1))
        }
        stored = seen + lock;
        return seen;
    }

    function readLock() external view returns (uint256 r) {
        r = lock;
        assembly {
            r := add(r, tload(1))
        }
    }
}
