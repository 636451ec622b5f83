import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForgeOutcome } from '../../src/forged-tools/index.ts';
import { MAX_SCHEMA_REPEATS } from '../../src/validation/index.ts';
import { APPROVE } from '../support/forge-requests.ts';
import { nestedUnder, RECURSIVE_ANY_OF, RECURSIVE_ANY_OF_POINTER } from '../support/hostile-schemas.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-forge-hostile-');
  host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
  await host.kernel.spawn(
    manifest(
      `name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\n`,
    ),
  );
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** A sandbox tool that says how deep its input nests under "a", forged with `inputSchema` and one test case of `input`. */
function depthTool(inputSchema: Record<string, unknown>, input: Record<string, unknown>): Record<string, unknown> {
  return {
    name: 'nest_depth',
    description: 'Says how deep its input nests under "a"',
    inputSchema,
    implementation: {
      mode: 'sandbox',
      code: 'function execute(input) { let depth = 0; for (let v = input; v !== null && typeof v === "object"; v = v.a) depth += 1; return { depth }; }',
      allowlist: [],
    },
    testCases: [{ input }],
  };
}

function refusal(outcome: ForgeOutcome): Extract<ForgeOutcome, { ok: false }> {
  if (outcome.ok) throw new Error(`expected a refusal, but "${outcome.tool.name}" was registered`);
  return outcome;
}

const CYCLE_REFUSAL = `inputSchema at "${RECURSIVE_ANY_OF_POINTER}": "$ref" cycle through "anyOf": "anyOf/0" and "anyOf/1" both lead on to "/$defs/n"`;

describe('a forge whose schema would make checking its input cost without bound (issue 36, item 1)', () => {
  // On the old code the forge passed the request stage, and its test case (depth 19) held the
  // daemon's main thread 5-7 s before failing at the test stage; depth 23 aborted V8.
  it.each([19, 23])(
    'is refused at the request stage when its inputSchema is a recursive $ref through an anyOf of identical branches, and its test input %i levels deep, naming the $ref and the limit, before any test runs or judge is asked',
    async (depth) => {
      const started = performance.now();
      const refused = refusal(await host.kernel.forgedTools.forge('smith', depthTool(RECURSIVE_ANY_OF, nestedUnder(depth)), 'test'));
      expect(refused.stage).toBe('request');
      expect(refused.reason).toContain(`invalid forge request: ${CYCLE_REFUSAL}`);
      expect(refused.reason).toContain(`Loom refuses schemas whose checks of one value against one subschema exceed ${MAX_SCHEMA_REPEATS}`);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(server.requests).toEqual([]);
      expect(await host.kernel.forgedTools.list({ agent: 'smith' })).toEqual([]);
    },
  );

  it('is refused the same way when the model calls forge_tool: the tool result names the $ref and the limit', async () => {
    const result = await host.kernel.runAgentTool('smith', 'forge_tool', depthTool(RECURSIVE_ANY_OF, nestedUnder(23)));
    expect(result.isError).toBe(true);
    expect(result.text).toContain(CYCLE_REFUSAL);
    expect(server.requests).toEqual([]);
  });

  it('is refused when the same cycle is its outputSchema', async () => {
    const request = { ...depthTool({ type: 'object', properties: { a: {} } }, nestedUnder(3)), outputSchema: RECURSIVE_ANY_OF };
    const refused = refusal(await host.kernel.forgedTools.forge('smith', request, 'test'));
    expect(refused.stage).toBe('request');
    expect(refused.reason).toContain(`outputSchema at "${RECURSIVE_ANY_OF_POINTER}"`);
  });

  it("registers a tool whose recursive schema recurses through one branch, and checks a call's input 500 levels deep", async () => {
    const linked = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/n' } },
      $defs: { n: { anyOf: [{ type: 'object', properties: { a: { $ref: '#/$defs/n' } } }, { type: 'integer' }] } },
    };
    server.script([APPROVE]);
    const outcome = await host.kernel.forgedTools.forge('smith', depthTool(linked, nestedUnder(19)), 'test');
    expect(outcome.ok).toBe(true);
    expect((await host.kernel.runAgentTool('smith', 'nest_depth', nestedUnder(500))).text).toBe('{"depth":500}');
    const wrong = await host.kernel.runAgentTool('smith', 'nest_depth', nestedUnder(500, 'leaf'));
    expect(wrong.isError).toBe(true);
    expect(wrong.text).toContain('/a/a/a');
  });
});
