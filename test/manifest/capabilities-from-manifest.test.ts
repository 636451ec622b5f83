import { describe, expect, it } from 'vitest';
import { findEscalations, validateInheritance } from '../../src/capabilities/index.ts';
import { CapabilityEscalationError } from '../../src/errors/index.ts';
import { capabilitiesFromManifest, ManifestCapabilitiesSchema } from '../../src/manifest/index.ts';

describe('capabilitiesFromManifest()', () => {
  it('grants nothing for an empty [capabilities] block', () => {
    expect(capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({}))).toEqual([]);
  });

  it('maps every manifest key to its capability kind, in the order of the keys', () => {
    const block = ManifestCapabilitiesSchema.parse({
      tools: ['web_search'],
      memory_read: ['*'],
      memory_write: ['self.*'],
      network: ['api.openai.com:443'],
      shell: ['git *'],
      agent_spawn: true,
      agent_message: ['summarizer'],
      agent_kill: ['worker-*'],
      file_read: ['/data/*'],
      file_write: ['/out/*'],
      llm_query: ['claude-*'],
      llm_max_tokens: 4000,
      env_read: ['HOME'],
      econ_spend: 2.5,
    });
    const capabilities = capabilitiesFromManifest(block);
    expect(capabilities).toEqual([
      { kind: 'tool_invoke', pattern: 'web_search' },
      { kind: 'memory_read', pattern: '*' },
      { kind: 'memory_write', pattern: 'self.*' },
      { kind: 'net_connect', pattern: 'api.openai.com:443' },
      { kind: 'shell_exec', pattern: 'git *' },
      { kind: 'agent_spawn' },
      { kind: 'agent_message', pattern: 'summarizer' },
      { kind: 'agent_kill', pattern: 'worker-*' },
      { kind: 'file_read', pattern: '/data/*' },
      { kind: 'file_write', pattern: '/out/*' },
      { kind: 'llm_query', pattern: 'claude-*' },
      { kind: 'llm_max_tokens', max_tokens: 4000 },
      { kind: 'env_read', pattern: 'HOME' },
      { kind: 'econ_spend', max_usd: 2.5 },
    ]);
  });

  it('turns tools = ["*"] into tool_all', () => {
    const capabilities = capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({ tools: ['*', 'web_*'] }));
    expect(capabilities).toEqual([{ kind: 'tool_all' }, { kind: 'tool_invoke', pattern: 'web_*' }]);
  });

  it('grants no boolean kind that is false', () => {
    const block = ManifestCapabilitiesSchema.parse({ agent_spawn: false });
    expect(capabilitiesFromManifest(block)).toEqual([]);
  });

  it('keeps econ_spend = 0 as an authority to spend nothing', () => {
    expect(capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({ econ_spend: 0 }))).toEqual([{ kind: 'econ_spend', max_usd: 0 }]);
  });

  it('feeds validateInheritance() with manifests: the spec/01 research agent cannot spawn a child with shell', () => {
    const parent = capabilitiesFromManifest(
      ManifestCapabilitiesSchema.parse({ network: ['*.wikipedia.org', 'api.openai.com'], memory_write: ['self.*'], shell: [] }),
    );
    const child = capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({ network: ['en.wikipedia.org:443'], shell: ['ls'] }));
    expect(() => validateInheritance(parent, child)).toThrow(CapabilityEscalationError);
    expect(findEscalations(parent, child)).toEqual([{ kind: 'shell_exec', pattern: 'ls' }]);
  });
});
