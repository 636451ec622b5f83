/**
 * `CallerKernel.cancelKeyedTurn`: the kernel, not the door, says who may cancel the turn another
 * caller's message started (an A2A task's), finds it by its key (never the session's current turn),
 * and names who cancelled it at the turn's end.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callerOf, kernelAs } from '../../src/kernel/index.ts';
import type { Principal } from '../../src/contracts/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { agentToml } from '../http/api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-cancel-keyed-turn-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const ADMIN: Principal = { name: 'admin', role: 'owner', agents: ['*'] };
const CREATOR: Principal = { name: 'helper-bot', role: 'user', agents: ['helper-*'] };
const OTHER: Principal = { name: 'other-bot', role: 'user', agents: ['helper-*'] };
const VIEWER: Principal = { name: 'watcher', role: 'viewer', agents: ['*'] };
const of = { caller: callerOf(CREATOR), thread: 'a2a:ctx-1' };

/** `helper-bot`'s turn with key `k-1` in its thread `a2a:ctx-1`, running (its model call never answers); resolves how it ended. */
async function creatorsTurn(): Promise<{ ended: Promise<string> }> {
  await host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
  model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
  const ended = kernelAs(host.kernel, CREATOR)
    .send('helper-slow', 'Tell me a story', { thread: 'a2a:ctx-1', idempotencyKey: 'k-1' })
    .then(
      () => 'finished',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
  await waitFor('the model call', () => model.requests.length >= 1);
  return { ended };
}

describe("cancelling the turn another caller's message started, by its key", () => {
  it('is refused to a viewer, and to another key (not its session), naming why; the turn goes on', async () => {
    const { ended } = await creatorsTurn();
    await expect(kernelAs(host.kernel, VIEWER).cancelKeyedTurn('helper-slow', 'k-1', of)).rejects.toThrow(
      'a viewer key ("watcher") may not cancel turns; it needs the user or owner role',
    );
    await expect(kernelAs(host.kernel, OTHER).cancelKeyedTurn('helper-slow', 'k-1', of)).rejects.toThrow(
      '"other-bot" may not cancel a turn of agent "helper-slow" in a session that is not its own',
    );
    expect(host.kernel.turnCounts().running).toBe(1);
    expect(await kernelAs(host.kernel, ADMIN).cancelKeyedTurn('helper-slow', 'k-1', of)).toBe('canceled');
    expect(await ended).toContain('the turn was cancelled by "admin"');
  });

  it('is allowed to the owner and to the creator, naming each; an ended turn or an unknown key is left as it is', async () => {
    const { ended } = await creatorsTurn();
    expect(await kernelAs(host.kernel, CREATOR).cancelKeyedTurn('helper-slow', 'k-1', of)).toBe('canceled');
    expect(await ended).toContain('the turn was cancelled by "helper-bot"');
    const [record] = await host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel'] });
    expect(record?.data).toMatchObject({ via: 'user:helper-bot', message: expect.stringContaining('cancelled by "helper-bot"') as string });
    const owner = kernelAs(host.kernel, ADMIN);
    expect(await owner.cancelKeyedTurn('helper-slow', 'k-1', of)).toBe('ended');
    expect(await owner.cancelKeyedTurn('helper-slow', 'k-2', of)).toBe('none');
  });
});
