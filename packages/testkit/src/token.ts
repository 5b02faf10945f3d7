// The small ERC-20-like token the read-API bench and the client-library tests deploy on anvil,
// compiled with the pinned solc for Cancun. Storage: slot 0 balanceOf, slot 1 totalSupply.
import { compiledContract, compileSolidity } from './solc.js';

export const TOKEN_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

contract Token {
    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);

    constructor(uint256 supply) {
        balanceOf[msg.sender] = supply;
        totalSupply = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 have = balanceOf[msg.sender];
        require(have >= value, "Token: insufficient balance");
        balanceOf[msg.sender] = have - value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }
}
`;

/** TOKEN_SOURCE compiled: its ABI (JSON) and creation bytecode. Throws on a compiler error. */
export function compileToken(): { abi: unknown[]; bytecode: `0x${string}` } {
  const out = compileSolidity({ file: 'Token.sol', source: TOKEN_SOURCE, evmVersion: 'cancun', output: 'bytecode' });
  const c = compiledContract(out, 'Token');
  return { abi: c.abi, bytecode: `0x${c.code}` };
}
