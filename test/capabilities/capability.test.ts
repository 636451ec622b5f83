import { describe, expect, it } from 'vitest';
import { CAPABILITY_KINDS, CapabilitySchema } from '../../src/capabilities/index.ts';
import { ONE_OF_EACH_KIND } from './one-of-each-kind.ts';

describe('CAPABILITY_KINDS', () => {
  it('lists the 21 kinds of spec/01 once each, the same as CapabilitySchema', () => {
    expect(CAPABILITY_KINDS).toHaveLength(21);
    expect(new Set(CAPABILITY_KINDS).size).toBe(21);
    const schemaKinds = CapabilitySchema.options.map((option) => option.shape.kind.value);
    expect([...schemaKinds].sort()).toEqual([...CAPABILITY_KINDS].sort());
  });
});

describe('CapabilitySchema', () => {
  it.each(CAPABILITY_KINDS)('CapabilitySchema accepts a well-formed %s', (kind) => {
    expect(CapabilitySchema.parse(ONE_OF_EACH_KIND[kind])).toEqual(ONE_OF_EACH_KIND[kind]);
  });

  it.each([
    ['an unknown kind', { kind: 'root' }],
    ['a missing kind', { pattern: '*' }],
    ['an unknown key', { kind: 'agent_spawn', everything: true }],
    ['a missing pattern', { kind: 'file_read' }],
    ['an empty pattern', { kind: 'file_read', pattern: '' }],
    ['a pattern that is not a string', { kind: 'shell_exec', pattern: 1 }],
    ['port 0', { kind: 'net_listen', port: 0 }],
    ['port 65536', { kind: 'net_listen', port: 65_536 }],
    ['a fractional token cap', { kind: 'llm_max_tokens', max_tokens: 1.5 }],
    ['a zero token cap', { kind: 'llm_max_tokens', max_tokens: 0 }],
    ['a negative spending authority', { kind: 'econ_spend', max_usd: -1 }],
    ['an infinite spending authority', { kind: 'econ_spend', max_usd: Number.POSITIVE_INFINITY }],
  ])('CapabilitySchema rejects %s', (_name, input) => {
    expect(CapabilitySchema.safeParse(input).success).toBe(false);
  });

  it('names the unknown key it rejects', () => {
    const result = CapabilitySchema.safeParse({ kind: 'agent_spawn', everything: true });
    expect(result.error?.issues[0]?.message).toContain('everything');
  });
});
