/**
 * `[emergent].max_forge_attempts_per_hour`: every forge attempt, refused at any stage or
 * registered, counts against an hourly rate per agent, read from the audit log (so a restart does
 * not reset it); past it a forge is refused before any work, naming the limit and the time of the
 * next allowed attempt on the daemon's clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { APPROVE, DOUBLE_IT } from '../support/forge-requests.ts';
import type { ForgeOutcome } from '../../src/forged-tools/index.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

const config = (): Record<string, unknown> => ({ default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
const HOUR = 60 * 60 * 1000;

beforeEach(async () => {
  dir = await makeTempDir('loom-forge-rate-');
  host = await openTestHost(dir.path, config());
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

function forger(name: string, emergent = ''): ReturnType<typeof manifest> {
  return manifest(
    `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\n${emergent}`,
  );
}

/** A forge refused at the test stage (its code gives the wrong answer): it ran code, and no judge was asked. */
const wrong = (index: number) => ({
  ...DOUBLE_IT,
  name: `wrong_${index}`,
  implementation: { mode: 'sandbox', code: 'function execute(input) { return { n: 0 }; }', allowlist: [] },
});
/** A forge refused at the build stage (its step names no tool). */
const unbuildable = (index: number) => ({
  ...DOUBLE_IT,
  name: `unbuildable_${index}`,
  implementation: { mode: 'compose', steps: [{ name: 'a', tool: 'no_such_tool', inputMapping: {} }] },
});

async function refusedAttempts(agent: string, count: number): Promise<ForgeOutcome[]> {
  const outcomes: ForgeOutcome[] = [];
  for (let index = 0; index < count; index += 1)
    outcomes.push(await host.kernel.forgedTools.forge(agent, index % 2 === 0 ? wrong(index) : unbuildable(index), 'test'));
  return outcomes;
}

describe('max_forge_attempts_per_hour', () => {
  it('refuses the 21st forge attempt of an hour (refused ones count) before any work, naming the limit and the next allowed time; an hour later one is allowed', async () => {
    await host.kernel.spawn(forger('smith'));
    const started = host.clock.now();
    const outcomes = await refusedAttempts('smith', 20);
    expect(outcomes.map((outcome) => (outcome.ok ? 'ok' : outcome.stage))).toEqual(
      Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? 'test' : 'build')),
    );
    const judgeCalls = server.requests.length;

    const refused = await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test');
    expect(refused).toEqual({
      ok: false,
      stage: 'request',
      reason: `agent "smith" has made 20 forge attempts in the last hour, its [emergent].max_forge_attempts_per_hour (refused attempts count too); the next attempt is allowed at ${new Date(started + HOUR).toISOString()} (in 60 min)`,
    });
    // Before any work: no judge was asked, and no tool exists.
    expect(server.requests.length).toBe(judgeCalls);
    expect(await host.kernel.forgedTools.list({ agent: 'smith' })).toEqual([]);
    const audit = await host.kernel.audit({ agent: 'smith', type: 'tool-forge' });
    expect(audit.at(-1)?.data).toMatchObject({
      tool: 'double_it',
      outcome: 'rate-limited',
      reason: expect.stringContaining('max_forge_attempts_per_hour') as unknown,
    });

    // Refusals by the rate are not attempts: asking again does not push the next allowed time on.
    await host.clock.advance(HOUR - 60_000);
    expect(await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('(in 1 min)') as unknown,
    });
    await host.clock.advance(60_000);
    server.script([APPROVE]);
    expect(await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test')).toMatchObject({ ok: true, tool: { name: 'double_it' } });
  });

  it('counts from the audit log: a restart does not give the agent a fresh hour', async () => {
    await host.kernel.spawn(forger('smith', 'max_forge_attempts_per_hour = 3\n'));
    await refusedAttempts('smith', 3);
    await host.close();
    host = await openTestHost(dir.path, config(), undefined, { clock: host.clock });
    expect(await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test')).toMatchObject({
      ok: false,
      stage: 'request',
      reason: expect.stringContaining('has made 3 forge attempts in the last hour') as unknown,
    });
  });

  it('counts each agent apart, imports and forge_tool calls too; 0 means no forging', async () => {
    await host.kernel.spawn(forger('one', 'max_forge_attempts_per_hour = 2\n'));
    await host.kernel.spawn(forger('two', 'max_forge_attempts_per_hour = 0\n'));
    expect(await host.kernel.forgedTools.import('one', 'not: [a document', 'test')).toMatchObject({ ok: false, stage: 'request' });
    server.script([{ toolCalls: [{ name: 'forge_tool', input: wrong(1) }] }, { text: 'it failed' }]);
    await host.kernel.send('one', 'make a tool');
    expect(await host.kernel.forgedTools.forge('one', DOUBLE_IT, 'test')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('has made 2 forge attempts') as unknown,
    });
    expect(await host.kernel.forgedTools.forge('two', DOUBLE_IT, 'test')).toEqual({
      ok: false,
      stage: 'request',
      reason: 'agent "two" may not forge tools: its [emergent].max_forge_attempts_per_hour is 0; raise it in its manifest to let it forge',
    });
  });
});
