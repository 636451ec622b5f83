import { describe, expect, it } from 'vitest';
import { CAPABILITY_KINDS, describeCapability, MANIFEST_KEY_BY_KIND } from '../../src/capabilities/index.ts';
import { ManifestCapabilitiesSchema } from '../../src/manifest/index.ts';
import { ONE_OF_EACH_KIND } from './one-of-each-kind.ts';

describe('MANIFEST_KEY_BY_KIND', () => {
  it('names a [capabilities] key of the manifest schema for every kind', () => {
    const keys = Object.keys(ManifestCapabilitiesSchema.shape);
    for (const kind of CAPABILITY_KINDS) {
      expect(keys).toContain(MANIFEST_KEY_BY_KIND[kind]);
    }
  });

  it('leaves no [capabilities] key of the manifest schema without a kind', () => {
    const mapped = new Set(Object.values(MANIFEST_KEY_BY_KIND));
    expect(Object.keys(ManifestCapabilitiesSchema.shape).filter((key) => !mapped.has(key as never))).toEqual([]);
  });

  it('maps the renamed keys', () => {
    expect(MANIFEST_KEY_BY_KIND.net_connect).toBe('network');
    expect(MANIFEST_KEY_BY_KIND.shell_exec).toBe('shell');
    expect(MANIFEST_KEY_BY_KIND.tool_invoke).toBe('tools');
    expect(MANIFEST_KEY_BY_KIND.tool_all).toBe('tools');
  });
});

describe('describeCapability()', () => {
  it('quotes a pattern under its manifest key', () => {
    expect(describeCapability({ kind: 'net_connect', pattern: 'api.openai.com' })).toBe('[capabilities].network "api.openai.com"');
    expect(describeCapability({ kind: 'tool_invoke', pattern: 'web_search' })).toBe('[capabilities].tools "web_search"');
  });

  it('escapes quotes in a pattern', () => {
    expect(describeCapability({ kind: 'shell_exec', pattern: 'echo "hi"' })).toBe('[capabilities].shell "echo \\"hi\\""');
  });

  it('writes tool_all as tools "*"', () => {
    expect(describeCapability({ kind: 'tool_all' })).toBe('[capabilities].tools "*"');
  });

  it('writes boolean kinds as "= true"', () => {
    expect(describeCapability({ kind: 'agent_spawn' })).toBe('[capabilities].agent_spawn = true');
    expect(describeCapability({ kind: 'econ_earn' })).toBe('[capabilities].econ_earn = true');
  });

  it('writes numeric caps as "= n" and a port bare', () => {
    expect(describeCapability({ kind: 'llm_max_tokens', max_tokens: 4000 })).toBe('[capabilities].llm_max_tokens = 4000');
    expect(describeCapability({ kind: 'econ_spend', max_usd: 2.5 })).toBe('[capabilities].econ_spend = 2.5');
    expect(describeCapability({ kind: 'net_listen', port: 8080 })).toBe('[capabilities].net_listen 8080');
  });

  it('writes an unlimited token cap as unset', () => {
    expect(describeCapability({ kind: 'llm_max_tokens', max_tokens: Number.POSITIVE_INFINITY })).toBe('[capabilities].llm_max_tokens unset (unlimited)');
  });

  it.each(CAPABILITY_KINDS)('describeCapability() names the manifest key of %s', (kind) => {
    expect(describeCapability(ONE_OF_EACH_KIND[kind])).toMatch(new RegExp(`^\\[capabilities\\]\\.${MANIFEST_KEY_BY_KIND[kind]} `));
  });
});
