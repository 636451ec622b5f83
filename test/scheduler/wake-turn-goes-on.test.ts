import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-wake-turn-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

describe("a wake-up's turn the journal holds as running (its node stopped in it)", () => {
  it('is found for its agent, so the wake-up job tried again does not run it a second time; a message turn is not one', async () => {
    const worker = await host.kernel.spawn(manifest('name = "worker"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n'));
    const helper = await host.kernel.spawn(manifest('name = "helper"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n'));
    const open = (id: string, agentId: string, cycle: boolean) =>
      host.store.turns.open({
        id,
        agentId,
        sessionId: `session-${agentId}`,
        conversation: null,
        request: { message: 'wake', caller: { kind: 'owner' }, ...(cycle ? { cycle: true } : {}) },
        idempotencyKey: null,
        receivedAt: 1_000,
      });
    expect(await host.kernel.wakeRuns.turnGoesOn('worker')).toBe(false);
    await open('t-wake', worker.id, true);
    await open('t-message', helper.id, false);
    expect(await host.kernel.wakeRuns.turnGoesOn('worker')).toBe(true);
    expect(await host.kernel.wakeRuns.turnGoesOn('helper')).toBe(false);
  });
});
