// The allowlist matcher, rule by rule (Infura's "Secure an API > Allowlists" semantics).
import {
  AllowlistError,
  MAX_ALLOWLIST_ENTRIES,
  allowlistRefusal,
  originMatches,
  validateAllowlists,
} from '../src/index.js';
import type { AllowlistRequest, Allowlists } from '../src/index.js';

const A1 = `0x${'11'.repeat(20)}`;
const A2 = `0x${'aB'.repeat(20)}`;
const A3 = `0x${'33'.repeat(20)}`;

const req = (over: Partial<AllowlistRequest> = {}): AllowlistRequest => ({
  method: 'eth_blockNumber',
  params: [],
  origin: '',
  userAgent: '',
  ...over,
});

/** Requests that differ in one field: the `accepted` values pass `lists`, the `refused` ones are refused by `by`. */
function expectList(
  lists: Allowlists,
  field: 'method' | 'userAgent' | 'origin',
  accepted: string[],
  refused: string[],
  by: ReturnType<typeof allowlistRefusal>,
): void {
  for (const v of accepted) expect(allowlistRefusal(lists, req({ [field]: v }))).toBeUndefined();
  for (const v of refused) expect(allowlistRefusal(lists, req({ [field]: v }))).toBe(by);
}

test('no allowlist (or empty lists) accepts everything', () => {
  expect(allowlistRefusal(undefined, req())).toBeUndefined();
  expect(allowlistRefusal({}, req({ method: 'eth_getLogs', params: [{}] }))).toBeUndefined();
  expect(allowlistRefusal({ methods: [], origins: [] }, req())).toBeUndefined();
});

test('methods: exact names, OR-ed', () => {
  const lists = { methods: ['eth_getBlockByNumber', 'eth_chainId'] };
  expectList(
    lists,
    'method',
    ['eth_chainId', 'eth_getBlockByNumber'],
    ['eth_getBlockByHash', 'eth_chainid'],
    'methods',
  );
});

test('user agents: substring match, case-sensitive, OR-ed; a missing header fails', () => {
  const lists = { userAgents: ['Android', 'MyApp/2'] };
  const accepted = ['Mozilla/5.0 (Linux; Android 14)', 'MyApp/2.1.0 node'];
  expectList(lists, 'userAgent', accepted, ['curl/8.5.0', 'android', ''], 'userAgents');
});

test('origins: wildcard subdomains, optional scheme that must match when given, ports, scheme-only entries', () => {
  expect(originMatches('https://*.example.com', 'https://app.example.com')).toBe(true);
  expect(originMatches('https://*.example.com', 'https://a.b.example.com')).toBe(true);
  expect(originMatches('https://*.example.com', 'https://example.com')).toBe(false); // the bare domain is not a subdomain
  expect(originMatches('https://*.example.com', 'http://app.example.com')).toBe(false); // scheme given: must match
  expect(originMatches('https://*.example.com', 'https://app.example.com.evil.net')).toBe(false);
  expect(originMatches('https://*.example.com', 'https://evilexample.com')).toBe(false);
  expect(originMatches('mydapp.example.com', 'https://mydapp.example.com')).toBe(true); // no scheme: any
  expect(originMatches('mydapp.example.com', 'http://mydapp.example.com')).toBe(true);
  expect(originMatches('mydapp.example.com', 'https://other.example.com')).toBe(false);
  expect(originMatches('MyDapp.Example.com', 'https://mydapp.example.com')).toBe(true); // hosts are case-insensitive
  expect(originMatches('http://127.0.0.1:8080', 'http://127.0.0.1:8080')).toBe(true);
  expect(originMatches('http://127.0.0.1:8080', 'http://127.0.0.1:8081')).toBe(false);
  expect(originMatches('http://127.0.0.1', 'http://127.0.0.1:8080')).toBe(false); // no port = the default port
  expect(originMatches('https://', 'https://anything.test')).toBe(true); // scheme only
  expect(originMatches('https://', 'http://anything.test')).toBe(false);
  expect(originMatches('https://*.example.com', 'null')).toBe(false);
  expect(originMatches('https://*.example.com', '')).toBe(false);
  const lists = { origins: ['https://*.example.com', 'http://localhost:3000'] };
  // '' is a request without an Origin header.
  expectList(lists, 'origin', ['http://localhost:3000', 'https://x.example.com'], ['https://evil.test', ''], 'origins');
});

test('contract addresses: eth_getLogs address (string or array), eth_getStorageAt, eth_getProof; other methods pass', () => {
  const lists = { addresses: [A1, A2.toLowerCase()] };
  expect(allowlistRefusal(lists, req({ method: 'eth_getStorageAt', params: [A1, '0x0', 'latest'] }))).toBeUndefined();
  expect(
    allowlistRefusal(
      lists,
      req({ method: 'eth_getStorageAt', params: [A2.toUpperCase().replace('0X', '0x'), '0x0', 'latest'] }),
    ),
  ).toBeUndefined(); // case-insensitive
  expect(allowlistRefusal(lists, req({ method: 'eth_getStorageAt', params: [A3, '0x0', 'latest'] }))).toBe('addresses');
  expect(allowlistRefusal(lists, req({ method: 'eth_getProof', params: [A1, [], 'latest'] }))).toBeUndefined();
  expect(allowlistRefusal(lists, req({ method: 'eth_getProof', params: [A3, [], 'latest'] }))).toBe('addresses');
  expect(allowlistRefusal(lists, req({ method: 'eth_getLogs', params: [{ address: A1 }] }))).toBeUndefined();
  expect(allowlistRefusal(lists, req({ method: 'eth_getLogs', params: [{ address: [A1, A2] }] }))).toBeUndefined();
  expect(allowlistRefusal(lists, req({ method: 'eth_getLogs', params: [{ address: [A1, A3] }] }))).toBe('addresses'); // every queried address must be listed
  expect(allowlistRefusal(lists, req({ method: 'eth_getLogs', params: [{ fromBlock: '0x0' }] }))).toBe('addresses'); // all addresses = not within the list
  expect(allowlistRefusal(lists, req({ method: 'eth_getBlockByNumber', params: ['0x1', false] }))).toBeUndefined(); // takes no address
});

test("contract addresses: Infura's read methods eth_call and eth_estimateGas (`to`), eth_getBalance, eth_getCode, eth_getTransactionCount", () => {
  const lists = { addresses: [A1, A2.toLowerCase()] };
  const cases: [string, (a: string) => unknown[]][] = [
    ['eth_call', (a) => [{ to: a, data: '0x70a08231' }, 'latest']],
    ['eth_estimateGas', (a) => [{ from: A3, to: a, data: '0x' }]],
    ['eth_getBalance', (a) => [a, 'latest']],
    ['eth_getCode', (a) => [a, '0x1']],
    ['eth_getTransactionCount', (a) => [a, 'pending']],
    ['eth_getStorageValues', (a) => [{ [a]: ['0x0'] }, 'latest']],
  ];
  for (const [method, params] of cases) {
    expect([method, allowlistRefusal(lists, req({ method, params: params(A1) }))]).toEqual([method, undefined]);
    expect([
      method,
      allowlistRefusal(lists, req({ method, params: params(A2.toUpperCase().replace('0X', '0x')) })),
    ]).toEqual([method, undefined]); // case-insensitive
    expect([method, allowlistRefusal(lists, req({ method, params: params(A3) }))]).toEqual([method, 'addresses']);
    // Without an allowlist of addresses, the same calls pass.
    expect([method, allowlistRefusal({ addresses: [] }, req({ method, params: params(A3) }))]).toEqual([
      method,
      undefined,
    ]);
  }
  // The `from` of a call is not what it queries: only `to` counts.
  expect(
    allowlistRefusal(lists, req({ method: 'eth_call', params: [{ from: A3, to: A1 }, 'latest'] })),
  ).toBeUndefined();
  // A call without `to` (a contract creation) queries no listed contract: refused.
  expect(allowlistRefusal(lists, req({ method: 'eth_call', params: [{ data: '0x6000' }, 'latest'] }))).toBe(
    'addresses',
  );
  expect(allowlistRefusal(lists, req({ method: 'eth_estimateGas', params: [{ from: A1 }] }))).toBe('addresses');
  // eth_getStorageValues: every queried account must be listed.
  expect(
    allowlistRefusal(
      lists,
      req({ method: 'eth_getStorageValues', params: [{ [A1]: ['0x0'], [A3]: ['0x0'] }, 'latest'] }),
    ),
  ).toBe('addresses');
});

test('types are AND-ed: a call must pass every type that has entries', () => {
  const lists = {
    methods: ['eth_getStorageAt'],
    origins: ['https://*.example.com'],
    userAgents: ['MyApp'],
    addresses: [A1],
  };
  const ok = req({
    method: 'eth_getStorageAt',
    params: [A1, '0x0', 'latest'],
    origin: 'https://a.example.com',
    userAgent: 'MyApp/1',
  });
  expect(allowlistRefusal(lists, ok)).toBeUndefined();
  expect(allowlistRefusal(lists, { ...ok, method: 'eth_getProof' })).toBe('methods');
  expect(allowlistRefusal(lists, { ...ok, origin: 'https://evil.test' })).toBe('origins');
  expect(allowlistRefusal(lists, { ...ok, userAgent: 'curl' })).toBe('userAgents');
  expect(allowlistRefusal(lists, { ...ok, params: [A3, '0x0', 'latest'] })).toBe('addresses');
});

test('validation: at most 30 entries per type, well-formed entries, normalised, unknown types refused', () => {
  expect(
    validateAllowlists({
      addresses: [A2],
      origins: ['HTTPS://*.Example.com'],
      methods: [' eth_chainId '],
      userAgents: ['x', 'x'],
    }),
  ).toEqual({
    addresses: [A2.toLowerCase()],
    origins: ['https://*.example.com'],
    methods: ['eth_chainId'],
    userAgents: ['x'],
  });
  expect(validateAllowlists({ methods: [] })).toEqual({});
  const many = Array.from({ length: MAX_ALLOWLIST_ENTRIES + 1 }, (_, i) => `m${i}`);
  expect(() => validateAllowlists({ methods: many })).toThrow(AllowlistError);
  expect(() => validateAllowlists({ methods: many.slice(0, MAX_ALLOWLIST_ENTRIES) })).not.toThrow();
  expect(() => validateAllowlists({ addresses: ['0x1234'] })).toThrow(/not a 0x-prefixed 20-byte/);
  expect(() => validateAllowlists({ origins: ['https://exa mple.com'] })).toThrow(AllowlistError);
  expect(() => validateAllowlists({ origins: ['*'] })).toThrow(AllowlistError);
  expect(() => validateAllowlists({ methods: ['eth_call; drop'] })).toThrow(AllowlistError);
  expect(() => validateAllowlists({ userAgents: ['a\nb'] })).toThrow(AllowlistError);
  expect(() => validateAllowlists({ ips: ['1.2.3.4'] })).toThrow(/unknown allowlist type/);
  expect(() => validateAllowlists([])).toThrow(AllowlistError);
});
