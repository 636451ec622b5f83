/**
 * A JSON Schema's `required` and `properties` read a value's own properties, never those every
 * object inherits (`constructor`, `toString`, `hasOwnProperty`): in every dialect, on the main
 * thread and on the schema-check thread (schemas with `pattern`).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileJsonSchema, type SchemaDialect } from '../../src/validation/index.ts';
import { APPROVE } from '../support/forge-requests.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const INHERITED_REQUIRED = { type: 'object', properties: { constructor: {} }, required: ['constructor', 'toString', 'valueOf'] };
const INHERITED_TYPED = { type: 'object', properties: { hasOwnProperty: { type: 'string' } } };
/** The same, with a `pattern`, so that values are checked on the schema-check thread. */
const ON_THREAD = { type: 'object', properties: { hasOwnProperty: { type: 'string' }, name: { type: 'string', pattern: '^a' } }, required: ['toString'] };

describe.each<SchemaDialect>(['draft-07', '2020-12'])('compileJsonSchema() in %s', (dialect) => {
  it('refuses a value that lacks a required property every object inherits ("constructor", "toString", "valueOf")', () => {
    const check = compileJsonSchema(INHERITED_REQUIRED, { dialect, root: '(input)' });
    expect(check({})).toContain("must have required property 'constructor'");
    expect(check({ constructor: 1, toString: 2, valueOf: 3 })).toBeUndefined();
  });

  it('checks a property named like an inherited one only when the value has it', () => {
    const check = compileJsonSchema(INHERITED_TYPED, { dialect, root: '(input)' });
    expect(check({})).toBeUndefined();
    expect(check({ hasOwnProperty: 'yes' })).toBeUndefined();
    expect(check({ hasOwnProperty: 1 })).toBe('/hasOwnProperty must be string');
  });

  it('reads own properties on the schema-check thread too', () => {
    const check = compileJsonSchema(ON_THREAD, { dialect, root: '(input)' });
    expect(check({ name: 'abc' })).toContain("must have required property 'toString'");
    expect(check({ toString: 'x', name: 'abc' })).toBeUndefined();
  });
});

describe('a forged tool whose inputSchema requires an inherited property', () => {
  const server = useScriptedModelServer();
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: TestHost;
  beforeEach(async () => {
    dir = await makeTempDir('loom-own-properties-');
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
    await host.kernel.spawn(
      manifest(
        `name = "alice"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\n`,
      ),
    );
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const tool = (inputSchema: Record<string, unknown>): Record<string, unknown> => ({
    name: 'echo_it',
    description: 'Says ok',
    inputSchema,
    implementation: { mode: 'sandbox', code: 'function execute(input) { return { ok: true }; }', allowlist: [] },
    testCases: [{ input: {}, expectedOutput: { ok: true } }],
  });

  it('fails its test whose input {} lacks it, before any judge', async () => {
    const before = server.requests.length;
    const outcome = await host.kernel.forgedTools.forge('alice', tool(INHERITED_REQUIRED), 'test');
    expect(outcome).toMatchObject({ ok: false, stage: 'test' });
    expect(outcome.ok ? '' : outcome.reason).toContain("must have required property 'constructor'");
    expect(server.requests.length).toBe(before);
  });

  it('is registered with a "hasOwnProperty" string property its test input leaves out', async () => {
    server.script([APPROVE]);
    const outcome = await host.kernel.forgedTools.forge('alice', tool(INHERITED_TYPED), 'test');
    expect(outcome.ok ? 'registered' : outcome.reason).toBe('registered');
  });
});
