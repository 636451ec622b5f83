import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifest/index.ts';

const load = (toml: string) => parseManifest(`name = "smith"\n${toml}`, { source: 'smith.toml' }).manifest;

describe('[emergent] in a manifest', () => {
  it("takes spec/02's settings with their defaults, and `emergent = true` as the empty table", () => {
    expect(load('emergent = true\n').emergent).toEqual({
      enabled: true,
      max_session_tools: 10,
      max_agent_tools: 50,
      sandbox_timeout_ms: 5000,
      sandbox_memory_mb: 128,
      max_forge_attempts_per_hour: 20,
      max_nested_calls: 50,
      promotion_threshold: { uses: 5, confidence: 0.8 },
      allowed_sandbox_apis: [],
      fetch_domain_allowlist: [],
      persist_sandbox_source: false,
    });
    expect(load('emergent = false\n').emergent).toMatchObject({ enabled: false });
    expect(load('').emergent).toBeUndefined();
  });

  it('refuses an unknown sandbox API, a judge model that is neither provider/model nor an alias, and a fetch domain with a scheme, naming each field', () => {
    expect(() => load('[emergent]\nallowed_sandbox_apis = ["fs"]\n')).toThrow(
      '[emergent].allowed_sandbox_apis[0]: expected one of fetch, fs.readFile, crypto, got "fs"',
    );
    expect(() => load('[emergent]\njudge_model = "gpt 4"\n')).toThrow('[emergent].judge_model: expected "<provider>/<model>"');
    expect(() => load('[emergent]\nfetch_domain_allowlist = ["https://api.example.com"]\n')).toThrow(
      '[emergent].fetch_domain_allowlist[0]: expected a host name such as "api.example.com"',
    );
    expect(() => load('[emergent]\nmax_sesion_tools = 3\n')).toThrow('[emergent].max_sesion_tools: unknown key');
  });
});
