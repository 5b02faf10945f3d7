// Typed errors. Every error a client can see is an RpcError subclass carrying its JSON-RPC
// code; the rpc package maps any thrown value to the wire in exactly one function
// (`toErrorObject`), so nothing else formats errors and no stack trace reaches a client.
//
// An RpcError is an answer, not a fault: it carries no stack trace. Capturing one is most of what
// constructing an error costs (V8 walks and symbolizes every frame, async ones included), and some
// are on hot paths: a reverting eth_call (code 3) is an ordinary answer, as is a refusal under a
// flood (-33200). An unexpected failure keeps its stack: it is not an RpcError, and toErrorObject
// maps it to -32603.

export class RpcError extends Error {
  /** Infura's error `event` (e.g. -33000 daily credits, -33200 throughput), written after `code`. */
  event?: number;
  /** Infura's human-readable `details`, written after `message`. */
  details?: string;
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = new.target.name;
  }
}

/** -32700: the body is not JSON. */
export class ParseError extends RpcError {
  constructor(message = 'parse error') {
    super(-32700, message);
  }
}

/** -32600: JSON, but not a JSON-RPC request (or an empty / oversized batch). */
export class InvalidRequestError extends RpcError {
  constructor(message = 'invalid request') {
    super(-32600, message);
  }
}

/** -32601 with geth's wording. */
export class MethodNotFoundError extends RpcError {
  constructor(method: string) {
    super(-32601, `the method ${method} does not exist/is not available`);
  }
}

/** -32602: names the argument and what was wrong with it. */
export class InvalidParamsError extends RpcError {
  constructor(message: string) {
    super(-32602, message);
  }
}

/** -32603: something broke on our side; the message never carries internals. */
export class InternalError extends RpcError {
  constructor(message = 'internal error') {
    super(-32603, message);
  }
}

/** -32000: geth's generic server error ("unknown block", ...). */
export class ServerError extends RpcError {
  constructor(message: string, data?: unknown) {
    super(-32000, message, data);
  }
}

/** -32005: a limit was hit (result cap, query timeout, daily credits). */
export class LimitExceededError extends RpcError {
  constructor(message: string, data?: unknown) {
    super(-32005, message, data);
  }
}

/** -32003: geth's "response too large": a batch's answers passed the configured size. */
export class ResponseTooLargeError extends RpcError {
  constructor() {
    super(-32003, 'response too large');
  }
}

/**
 * The store could not answer (I/O failure, closed, injected outage). Not an RpcError: the
 * server may fail over on it; if nothing handles it, it surfaces as -32603.
 */
export class StoreUnavailableError extends Error {
  constructor(message = 'store unavailable', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * 4444 with geth's wording: the block (or its state) lies before the first block this node holds
 * (a node that joined its chain at block N holds history from N on). `data.firstBlock` names N.
 */
export class PrunedHistoryError extends RpcError {
  constructor(readonly firstBlock: bigint) {
    super(4444, 'pruned history unavailable', { firstBlock: `0x${firstBlock.toString(16)}` });
  }
}

/**
 * -32000 for a proof of a block whose state trie the datadir no longer keeps (`--state-trie
 * window=<N>`: the tries of the last N blocks). geth's path scheme and reth's proof window refuse
 * it too: an account proof needs the block's account trie, and the flat history holds values only.
 */
export class PrunedTrieError extends ServerError {
  constructor(block: bigint, window: number) {
    super(
      `state trie for block ${block} pruned: this datadir keeps the last ${window} blocks' tries (--state-trie window=${window}); a datadir created with --state-trie archive keeps every block's, for proofs at any block`,
    );
  }
}

/**
 * A trie walk reached a node the store does not hold (a node that joined at block N holds no
 * state of its own: its trie nodes arrive with verified proofs). Not an RpcError: the proven-state
 * layer fetches the path and retries; if nothing handles it, it surfaces as -32603.
 */
export class MissingTrieNodeError extends Error {
  constructor(readonly nodeHash: Uint8Array) {
    super(`missing trie node 0x${Buffer.from(nodeHash).toString('hex')}`);
    this.name = 'MissingTrieNodeError';
  }
}
