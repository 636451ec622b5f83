import { describe, expect, it } from 'vitest';
import { type Capability, CAPABILITY_KINDS, isGranted } from '../../src/capabilities/index.ts';
import { ONE_OF_EACH_KIND } from './one-of-each-kind.ts';

const fileRead = (pattern: string): Capability => ({ kind: 'file_read', pattern });
const net = (pattern: string): Capability => ({ kind: 'net_connect', pattern });

describe('isGranted() denies by default', () => {
  it.each(CAPABILITY_KINDS.filter((kind) => kind !== 'llm_max_tokens'))('isGranted() denies %s when nothing is granted', (kind) => {
    expect(isGranted([], ONE_OF_EACH_KIND[kind])).toBe(false);
  });

  it('isGranted() allows any llm_max_tokens amount when nothing is granted, since no cap means unlimited', () => {
    expect(isGranted([], { kind: 'llm_max_tokens', max_tokens: 1_000_000 })).toBe(true);
  });

  it.each(CAPABILITY_KINDS)('isGranted() allows %s when exactly that capability is granted', (kind) => {
    const capability = ONE_OF_EACH_KIND[kind];
    expect(isGranted([capability], capability)).toBe(true);
  });

  it.each(CAPABILITY_KINDS.filter((kind) => kind !== 'llm_max_tokens'))('isGranted() denies %s when only every other kind is granted', (kind) => {
    // tool_all grants tools on purpose; leave it out when asking for one.
    const others = CAPABILITY_KINDS.filter((other) => other !== kind && !(kind === 'tool_invoke' && other === 'tool_all'));
    expect(
      isGranted(
        others.map((other) => ONE_OF_EACH_KIND[other]),
        ONE_OF_EACH_KIND[kind],
      ),
    ).toBe(false);
  });
});

describe('isGranted() for file_read and file_write', () => {
  it('allows a path under a prefix wildcard', () => {
    expect(isGranted([fileRead('/data/*')], fileRead('/data/reports/q4.json'))).toBe(true);
  });

  it('denies "/data/../etc/passwd" under "/data/*", since it is "/etc/passwd"', () => {
    expect(isGranted([fileRead('/data/*')], fileRead('/data/../etc/passwd'))).toBe(false);
    expect(isGranted([fileRead('/etc/*')], fileRead('/data/../etc/passwd'))).toBe(true);
  });

  it('denies "/database/x" under "/data/*"', () => {
    expect(isGranted([fileRead('/data/*')], fileRead('/database/x'))).toBe(false);
  });

  it('denies a relative path, even under "*"', () => {
    for (const path of ['data/x', './data/x', '../data/x', '']) {
      expect(isGranted([fileRead('*'), fileRead('/data/*')], fileRead(path))).toBe(false);
    }
  });

  it('allows any absolute path under "*"', () => {
    expect(isGranted([fileRead('*')], fileRead('/etc/passwd'))).toBe(true);
  });

  it('normalises ".", empty segments and trailing slashes of values and patterns', () => {
    expect(isGranted([fileRead('/data/./reports/')], fileRead('/data//reports/'))).toBe(true);
    expect(isGranted([fileRead('/data/reports')], fileRead('/data/reports/.'))).toBe(true);
    expect(isGranted([fileRead('/data/*')], fileRead('/data/./x/../y'))).toBe(true);
  });

  it('keeps ".." at the root at the root, as POSIX does', () => {
    expect(isGranted([fileRead('/etc/*')], fileRead('/../../etc/passwd'))).toBe(true);
    expect(isGranted([fileRead('/data/*')], fileRead('/../../etc/passwd'))).toBe(false);
  });

  it('denies a path holding a NUL byte', () => {
    // Without the check, the NUL would hide the real suffix: the OS never sees ".png".
    expect(isGranted([fileRead('/data/*.png')], fileRead('/data/secret.txt\0.png'))).toBe(false);
    expect(isGranted([fileRead('/data/*.png')], fileRead('/data/chart.png'))).toBe(true);
  });

  it('reads ".." in a pattern before any "*" as part of the path', () => {
    expect(isGranted([fileRead('/data/../etc/*')], fileRead('/etc/passwd'))).toBe(true);
  });

  it('grants nothing for a pattern with ".." after "*", whose meaning is ambiguous', () => {
    expect(isGranted([fileRead('/data/*/../x')], fileRead('/data/x'))).toBe(false);
    expect(isGranted([fileRead('/data/*/..')], fileRead('/data'))).toBe(false);
  });

  it('grants nothing for a relative pattern', () => {
    expect(isGranted([fileRead('data/*')], fileRead('/data/x'))).toBe(false);
  });

  it('does not let file_read grant file_write', () => {
    expect(isGranted([fileRead('/data/*')], { kind: 'file_write', pattern: '/data/x' })).toBe(false);
    expect(isGranted([{ kind: 'file_write', pattern: '/data/*' }], { kind: 'file_write', pattern: '/data/x' })).toBe(true);
  });
});

describe('isGranted() for net_connect', () => {
  it('allows a subdomain under "*.openai.com", with or without a port', () => {
    expect(isGranted([net('*.openai.com')], net('api.openai.com'))).toBe(true);
    expect(isGranted([net('*.openai.com')], net('api.openai.com:443'))).toBe(true);
  });

  it('denies "evilopenai.com", "openai.com.evil.net" and "openai.com" under "*.openai.com"', () => {
    for (const value of ['evilopenai.com', 'openai.com.evil.net', 'openai.com.evil.net:443', 'openai.com']) {
      expect(isGranted([net('*.openai.com')], net(value))).toBe(false);
    }
  });

  it('compares hosts case-insensitively, in patterns and values', () => {
    expect(isGranted([net('*.openai.com')], net('API.OpenAI.COM:443'))).toBe(true);
    expect(isGranted([net('API.openai.com')], net('api.OPENAI.com'))).toBe(true);
  });

  it('ignores a trailing dot on the host', () => {
    expect(isGranted([net('api.openai.com')], net('api.openai.com.:443'))).toBe(true);
    expect(isGranted([net('api.openai.com.')], net('api.openai.com'))).toBe(true);
  });

  it('allows only the given port when the pattern has one', () => {
    expect(isGranted([net('api.openai.com:443')], net('api.openai.com:443'))).toBe(true);
    expect(isGranted([net('api.openai.com:443')], net('api.openai.com:80'))).toBe(false);
  });

  it('denies a value without a port under a pattern with one', () => {
    expect(isGranted([net('api.openai.com:443')], net('api.openai.com'))).toBe(false);
  });

  it('allows any port with port "*" or no port at all', () => {
    expect(isGranted([net('api.openai.com:*')], net('api.openai.com:8443'))).toBe(true);
    expect(isGranted([net('api.openai.com')], net('api.openai.com:8443'))).toBe(true);
  });

  it('allows any host on a port with "*:443"', () => {
    expect(isGranted([net('*:443')], net('example.org:443'))).toBe(true);
    expect(isGranted([net('*:443')], net('example.org:80'))).toBe(false);
  });

  it('matches bracketed IPv6 addresses and their ports', () => {
    expect(isGranted([net('[::1]:8080')], net('[::1]:8080'))).toBe(true);
    expect(isGranted([net('[::1]:8080')], net('[::1]:8081'))).toBe(false);
    expect(isGranted([net('[::1]')], net('[::1]:9'))).toBe(true);
    expect(isGranted([net('[::1]')], net('::1'))).toBe(true);
    expect(isGranted([net('[::1]')], net('[::2]'))).toBe(false);
    expect(isGranted([net('*')], net('[2001:DB8::1]:443'))).toBe(true);
  });

  it('denies malformed addresses even under "*"', () => {
    for (const value of [
      '',
      ':443',
      'api.openai.com:',
      'api.openai.com:0',
      'api.openai.com:65536',
      'api.openai.com:https',
      'a b',
      '[::1',
      '[::1]x',
      '[::1]x443',
      'api.openai.com:*',
      'evil.com/x.openai.com',
      'evil.com#.openai.com',
      'a..b',
    ]) {
      expect(isGranted([net('*')], net(value)), value).toBe(false);
    }
  });

  it('denies a URL-shaped value that would otherwise end in a granted host', () => {
    expect(isGranted([net('*.openai.com')], net('evil.com/x.openai.com'))).toBe(false);
  });
});

describe('isGranted() for net_listen', () => {
  it('allows exactly the granted port', () => {
    expect(isGranted([{ kind: 'net_listen', port: 8080 }], { kind: 'net_listen', port: 8080 })).toBe(true);
    expect(isGranted([{ kind: 'net_listen', port: 8080 }], { kind: 'net_listen', port: 8081 })).toBe(false);
  });
});

describe('isGranted() for tools', () => {
  const tool = (pattern: string): Capability => ({ kind: 'tool_invoke', pattern });

  it('allows a tool by name or by glob, and no other', () => {
    expect(isGranted([tool('web_search')], tool('web_search'))).toBe(true);
    expect(isGranted([tool('web_*')], tool('web_fetch'))).toBe(true);
    expect(isGranted([tool('web_*')], tool('file_read'))).toBe(false);
  });

  it('allows every tool under tool_all', () => {
    expect(isGranted([{ kind: 'tool_all' }], tool('shell_exec'))).toBe(true);
  });

  it('treats tool_invoke "*" as tool_all', () => {
    expect(isGranted([tool('*')], tool('anything'))).toBe(true);
    expect(isGranted([tool('*')], { kind: 'tool_all' })).toBe(true);
  });

  it('denies a request for tool_all under named tools or a partial glob', () => {
    expect(isGranted([tool('web_*'), tool('file_read')], { kind: 'tool_all' })).toBe(false);
  });

  it('denies an empty tool name, even under tool_all', () => {
    expect(isGranted([{ kind: 'tool_all' }], tool(''))).toBe(false);
  });

  it('reads "*" in the requested tool name as a character, not a wildcard', () => {
    expect(isGranted([tool('web_search')], tool('*'))).toBe(false);
  });
});

describe('isGranted() for llm_max_tokens', () => {
  const cap = (max_tokens: number): Capability => ({ kind: 'llm_max_tokens', max_tokens });

  it('allows up to the cap and denies past it', () => {
    expect(isGranted([cap(1000)], cap(500))).toBe(true);
    expect(isGranted([cap(1000)], cap(1000))).toBe(true);
    expect(isGranted([cap(1000)], cap(1001))).toBe(false);
  });

  it('applies the smallest of several caps', () => {
    expect(isGranted([cap(1000), cap(200)], cap(500))).toBe(false);
  });

  it('denies a negative or NaN amount', () => {
    expect(isGranted([], cap(-1))).toBe(false);
    expect(isGranted([], cap(Number.NaN))).toBe(false);
  });
});

describe('isGranted() for econ_spend', () => {
  const spend = (max_usd: number): Capability => ({ kind: 'econ_spend', max_usd });

  it('allows spending up to the granted amount and denies past it', () => {
    expect(isGranted([spend(5)], spend(2))).toBe(true);
    expect(isGranted([spend(5)], spend(5))).toBe(true);
    expect(isGranted([spend(5)], spend(5.01))).toBe(false);
  });

  it('denies any spending, even zero, without econ_spend', () => {
    expect(isGranted([{ kind: 'econ_earn' }], spend(0))).toBe(false);
  });

  it('applies the largest of several authorities', () => {
    expect(isGranted([spend(1), spend(10)], spend(8))).toBe(true);
  });

  it('denies a negative or NaN amount', () => {
    expect(isGranted([spend(5)], spend(-1))).toBe(false);
    expect(isGranted([spend(5)], spend(Number.NaN))).toBe(false);
  });
});

describe('isGranted() for boolean kinds', () => {
  const booleanKinds = ['agent_spawn', 'ofp_discover', 'ofp_advertise', 'econ_earn'] as const;

  it.each(booleanKinds)('isGranted() allows %s only when that very kind is held', (kind) => {
    const others = booleanKinds.filter((other) => other !== kind).map((other): Capability => ({ kind: other }));
    expect(isGranted(others, { kind })).toBe(false);
    expect(isGranted([...others, { kind }], { kind })).toBe(true);
  });
});

describe('isGranted() for the other pattern kinds', () => {
  const cases = [
    ['llm_query', 'claude-*', 'claude-sonnet-4', 'gpt-4o'],
    ['agent_message', 'summarizer', 'summarizer', 'summarizer-2'],
    ['agent_kill', 'worker-*', 'worker-1', 'manager'],
    ['memory_read', 'self.*', 'self.notes', 'shared.notes'],
    ['memory_write', 'self.*', 'self.notes', 'other.self.notes'],
    ['shell_exec', 'git *', 'git status', 'rm -rf /'],
    ['env_read', 'LOOM_*', 'LOOM_HOME', 'AWS_SECRET_ACCESS_KEY'],
    ['ofp_connect', 'peer-*', 'peer-7', 'stranger'],
    ['econ_transfer', 'treasurer', 'treasurer', 'thief'],
  ] as const;

  it.each(cases)('isGranted() for %s "%s" allows "%s" and denies "%s"', (kind, pattern, allowed, denied) => {
    expect(isGranted([{ kind, pattern }], { kind, pattern: allowed })).toBe(true);
    expect(isGranted([{ kind, pattern }], { kind, pattern: denied })).toBe(false);
  });

  it('denies an empty value even under "*"', () => {
    expect(isGranted([{ kind: 'env_read', pattern: '*' }], { kind: 'env_read', pattern: '' })).toBe(false);
  });

  it('does not let memory_read grant memory_write', () => {
    expect(isGranted([{ kind: 'memory_read', pattern: '*' }], { kind: 'memory_write', pattern: 'self.notes' })).toBe(false);
  });
});
