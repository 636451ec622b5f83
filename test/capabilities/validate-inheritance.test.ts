import { describe, expect, it } from 'vitest';
import { type Capability, CAPABILITY_KINDS, type CapabilityKind, findEscalations, validateInheritance } from '../../src/capabilities/index.ts';
import { CapabilityEscalationError } from '../../src/errors/index.ts';
import { ONE_OF_EACH_KIND } from './one-of-each-kind.ts';

/** The error `validateInheritance` throws, or a failed expectation when it throws none. */
function escalationError(parent: readonly Capability[], child: readonly Capability[]): CapabilityEscalationError {
  try {
    validateInheritance(parent, child);
  } catch (error) {
    expect(error).toBeInstanceOf(CapabilityEscalationError);
    return error as CapabilityEscalationError;
  }
  expect.fail('validateInheritance() accepted the child');
}

const file = (pattern: string): Capability => ({ kind: 'file_read', pattern });
const net = (pattern: string): Capability => ({ kind: 'net_connect', pattern });
const tool = (pattern: string): Capability => ({ kind: 'tool_invoke', pattern });
const tokens = (max_tokens: number): Capability => ({ kind: 'llm_max_tokens', max_tokens });
const spend = (max_usd: number): Capability => ({ kind: 'econ_spend', max_usd });

describe('validateInheritance() with the example of spec/01', () => {
  const parent = [file('/data/*'), net('api.example.com')];

  it('validateInheritance() refuses a child with shell_exec when the parent has none', () => {
    const error = escalationError(parent, [file('/data/reports/*'), { kind: 'shell_exec', pattern: '*' }]);
    expect(error.code).toBe('CAPABILITY_ESCALATION');
    expect(error.category).toBe('user');
    expect(error.message).toContain('[capabilities].shell "*" is not covered by the parent (the parent grants no [capabilities].shell)');
    expect(error.message).not.toContain('file_read');
    expect(error.details).toEqual({ uncovered: [{ kind: 'shell_exec', pattern: '*' }] });
  });

  it("validateInheritance() accepts a child whose file_read is a subset of the parent's", () => {
    expect(() => validateInheritance(parent, [file('/data/reports/*'), net('api.example.com:443')])).not.toThrow();
  });
});

describe('validateInheritance() messages', () => {
  it('names the parent patterns that fail to cover a child pattern', () => {
    const error = escalationError([net('api.example.com')], [net('*.example.com')]);
    expect(error.message).toContain('[capabilities].network "*.example.com" is not covered by the parent\'s [capabilities].network "api.example.com"');
  });

  it('lists every parent pattern of the kind, comma-separated', () => {
    const error = escalationError([file('/a/*'), file('/b/*')], [file('/c/*')]);
    expect(error.message).toContain('[capabilities].file_read "/c/*" is not covered by the parent\'s [capabilities].file_read "/a/*", "/b/*"');
  });

  it('joins several uncovered capabilities with "; ", in the child\'s order', () => {
    const error = escalationError([], [{ kind: 'agent_spawn' }, { kind: 'env_read', pattern: 'HOME' }]);
    expect(error.message).toContain(
      '[capabilities].agent_spawn = true is not covered by the parent (the parent grants no [capabilities].agent_spawn); ' +
        '[capabilities].env_read "HOME" is not covered by the parent (the parent grants no [capabilities].env_read)',
    );
    expect(error.details).toEqual({ uncovered: [{ kind: 'agent_spawn' }, { kind: 'env_read', pattern: 'HOME' }] });
  });

  it('says what failed first and how to fix it', () => {
    const error = escalationError([], [{ kind: 'econ_earn' }]);
    expect(error.message).toMatch(/^cannot give a child agent capabilities its parent lacks: /);
    expect(error.message).toMatch(/Remove them from the child's \[capabilities\] or grant them to the parent first\.$/);
  });

  it('reports a capability the child lists twice once', () => {
    const shell: Capability = { kind: 'shell_exec', pattern: 'ls' };
    expect(findEscalations([], [shell, { ...shell }])).toEqual([shell]);
  });
});

describe('findEscalations() for every kind', () => {
  it('finds nothing for a child with no capabilities, even under a parent with none', () => {
    expect(findEscalations([], [])).toEqual([]);
  });

  it.each(CAPABILITY_KINDS.filter((kind) => kind !== 'llm_max_tokens'))('findEscalations() reports %s when the parent has no capability at all', (kind) => {
    expect(findEscalations([], [ONE_OF_EACH_KIND[kind]])).toEqual([ONE_OF_EACH_KIND[kind]]);
  });

  it.each(CAPABILITY_KINDS)('findEscalations() accepts %s when the parent holds the same capability', (kind) => {
    expect(findEscalations([ONE_OF_EACH_KIND[kind]], [ONE_OF_EACH_KIND[kind]])).toEqual([]);
  });

  /** For each pattern kind: a parent pattern, a narrower child it covers, a wider one it does not. */
  const patternCases: ReadonlyArray<
    readonly [
      Exclude<CapabilityKind, 'net_listen' | 'tool_all' | 'llm_max_tokens' | 'econ_spend' | 'agent_spawn' | 'ofp_discover' | 'ofp_advertise' | 'econ_earn'>,
      string,
      string,
      string,
    ]
  > = [
    ['file_read', '/data/*', '/data/reports/*', '/*'],
    ['file_write', '/out/*', '/out/today.txt', '/out*'],
    ['net_connect', '*.example.com', 'api.example.com:443', '*.com'],
    ['tool_invoke', 'web_*', 'web_search', '*'],
    ['llm_query', 'claude-*', 'claude-sonnet-*', 'gpt-*'],
    ['agent_message', 'team-*', 'team-alpha', '*'],
    ['agent_kill', 'worker-*', 'worker-1', 'manager'],
    ['memory_read', 'self.*', 'self.notes.*', 'shared.*'],
    ['memory_write', 'self.*', 'self.scratch', '*.scratch'],
    ['shell_exec', 'git *', 'git status', 'rm *'],
    ['env_read', 'LOOM_*', 'LOOM_HOME', '*'],
    ['ofp_connect', 'peer-*', 'peer-7', 'stranger-*'],
    ['econ_transfer', 'treasurer', 'treasurer', 'treasurer-*'],
  ];

  it.each(patternCases)('findEscalations() for %s "%s" accepts "%s" and reports "%s"', (kind, parent, covered, uncovered) => {
    expect(findEscalations([{ kind, pattern: parent }], [{ kind, pattern: covered }])).toEqual([]);
    expect(findEscalations([{ kind, pattern: parent }], [{ kind, pattern: uncovered }])).toEqual([{ kind, pattern: uncovered }]);
  });

  it('does not let one pattern kind cover another', () => {
    expect(findEscalations([{ kind: 'memory_read', pattern: '*' }], [{ kind: 'memory_write', pattern: 'self' }])).toHaveLength(1);
    expect(findEscalations([{ kind: 'file_write', pattern: '*' }], [file('/data/x')])).toHaveLength(1);
  });
});

describe('findEscalations() for file patterns', () => {
  it('accepts "/data/reports/*" under "/data/*" and refuses "/*"', () => {
    expect(findEscalations([file('/data/*')], [file('/data/reports/*')])).toEqual([]);
    expect(findEscalations([file('/data/*')], [file('/*')])).toHaveLength(1);
  });

  it('refuses a child pattern that climbs out with ".."', () => {
    expect(findEscalations([file('/data/*')], [file('/data/../etc/*')])).toHaveLength(1);
  });

  it('accepts a child pattern that only looks different before normalising', () => {
    expect(findEscalations([file('/data/*')], [file('/data/./reports//x/')])).toEqual([]);
  });

  it('refuses "/database/*" under "/data/*"', () => {
    expect(findEscalations([file('/data/*')], [file('/database/*')])).toHaveLength(1);
  });

  it('refuses a relative child pattern and one with ".." after "*"', () => {
    expect(findEscalations([file('*')], [file('data/*')])).toHaveLength(1);
    expect(findEscalations([file('*')], [file('/data/*/..')])).toHaveLength(1);
  });

  it('covers every absolute child pattern with "*"', () => {
    expect(findEscalations([file('*')], [file('/etc/*'), file('/')])).toEqual([]);
  });
});

describe('findEscalations() for network patterns', () => {
  it('accepts "api.*.com" under "*.com" and refuses the reverse', () => {
    expect(findEscalations([net('*.com')], [net('api.*.com')])).toEqual([]);
    expect(findEscalations([net('api.*.com')], [net('*.com')])).toHaveLength(1);
  });

  it('accepts a child with a port under a parent without one, and refuses the reverse', () => {
    expect(findEscalations([net('api.x.com')], [net('api.x.com:443')])).toEqual([]);
    expect(findEscalations([net('api.x.com:443')], [net('api.x.com')])).toHaveLength(1);
  });

  it('refuses another port and port "*" under a parent with a port', () => {
    expect(findEscalations([net('api.x.com:443')], [net('api.x.com:80')])).toHaveLength(1);
    expect(findEscalations([net('api.x.com:443')], [net('api.x.com:*')])).toHaveLength(1);
    expect(findEscalations([net('api.x.com:*')], [net('api.x.com:80')])).toEqual([]);
  });

  it('compares hosts case-insensitively and ignores a trailing dot', () => {
    expect(findEscalations([net('*.Example.com')], [net('API.example.COM.')])).toEqual([]);
  });

  it('handles IPv6 children', () => {
    expect(findEscalations([net('[::1]')], [net('[::1]:8080')])).toEqual([]);
    expect(findEscalations([net('[::1]:8080')], [net('[::1]')])).toHaveLength(1);
  });

  it('refuses a malformed child pattern even under "*"', () => {
    for (const pattern of [':443', 'api.x.com:http', 'api.x.com:0', '[::1', '[::1]x443']) {
      expect(findEscalations([net('*')], [net(pattern)]), pattern).toHaveLength(1);
    }
  });

  it('refuses "evilopenai.com" and "openai.com.evil.net" under "*.openai.com"', () => {
    expect(findEscalations([net('*.openai.com')], [net('evilopenai.com'), net('openai.com.evil.net')])).toHaveLength(2);
  });
});

describe('findEscalations() for net_listen', () => {
  it('accepts the same port and refuses another', () => {
    expect(findEscalations([{ kind: 'net_listen', port: 8080 }], [{ kind: 'net_listen', port: 8080 }])).toEqual([]);
    expect(findEscalations([{ kind: 'net_listen', port: 8080 }], [{ kind: 'net_listen', port: 9090 }])).toHaveLength(1);
  });
});

describe('findEscalations() for tools', () => {
  it('covers every tool_invoke and tool_all with tool_all', () => {
    expect(findEscalations([{ kind: 'tool_all' }], [tool('anything'), tool('*'), { kind: 'tool_all' }])).toEqual([]);
  });

  it('treats a parent tool_invoke "*" as tool_all', () => {
    expect(findEscalations([tool('*')], [{ kind: 'tool_all' }])).toEqual([]);
  });

  it('refuses tool_all under named tools, naming them', () => {
    const error = escalationError([tool('web_*')], [{ kind: 'tool_all' }]);
    expect(error.message).toContain('[capabilities].tools "*" is not covered by the parent\'s [capabilities].tools "web_*"');
  });
});

describe('findEscalations() for llm_max_tokens', () => {
  it('accepts any child cap when the parent has none', () => {
    expect(findEscalations([], [tokens(1_000_000)])).toEqual([]);
  });

  it("accepts a cap up to the parent's and refuses a larger one", () => {
    expect(findEscalations([tokens(4000)], [tokens(4000)])).toEqual([]);
    const error = escalationError([tokens(4000)], [tokens(8000)]);
    expect(error.message).toContain("[capabilities].llm_max_tokens = 8000 is not covered by the parent's [capabilities].llm_max_tokens = 4000");
  });

  it('refuses a child without a cap under a capped parent, as unlimited', () => {
    expect(findEscalations([tokens(4000)], [])).toEqual([{ kind: 'llm_max_tokens', max_tokens: Number.POSITIVE_INFINITY }]);
    const error = escalationError([tokens(4000)], []);
    expect(error.message).toContain("[capabilities].llm_max_tokens unset (unlimited) is not covered by the parent's [capabilities].llm_max_tokens = 4000");
    expect(error.details).toEqual({ uncovered: [{ kind: 'llm_max_tokens', max_tokens: null }] });
  });

  it('compares the smallest cap on each side', () => {
    expect(findEscalations([tokens(4000), tokens(500)], [tokens(1000)])).toEqual([tokens(1000)]);
    expect(findEscalations([tokens(500)], [tokens(100), tokens(9000)])).toEqual([]);
  });
});

describe('findEscalations() for econ_spend', () => {
  it('refuses any spending authority when the parent has none', () => {
    const error = escalationError([], [spend(1)]);
    expect(error.message).toContain('[capabilities].econ_spend = 1 is not covered by the parent (the parent grants no [capabilities].econ_spend)');
  });

  it("accepts up to the parent's authority and refuses more", () => {
    expect(findEscalations([spend(10)], [spend(5)])).toEqual([]);
    expect(findEscalations([spend(10)], [spend(10)])).toEqual([]);
    const error = escalationError([spend(10)], [spend(10.5)]);
    expect(error.message).toContain("[capabilities].econ_spend = 10.5 is not covered by the parent's [capabilities].econ_spend = 10");
  });

  it('accepts a child without econ_spend under any parent', () => {
    expect(findEscalations([spend(10)], [])).toEqual([]);
  });
});

describe('findEscalations() for boolean kinds', () => {
  const booleanKinds = ['agent_spawn', 'ofp_discover', 'ofp_advertise', 'econ_earn'] as const;

  it.each(booleanKinds)('validateInheritance() refuses %s unless the parent holds it', (kind) => {
    const others = booleanKinds.filter((other) => other !== kind).map((other): Capability => ({ kind: other }));
    const error = escalationError(others, [{ kind }]);
    expect(error.message).toContain(`[capabilities].${kind} = true is not covered by the parent (the parent grants no [capabilities].${kind})`);
    expect(() => validateInheritance([...others, { kind }], [{ kind }])).not.toThrow();
  });
});
