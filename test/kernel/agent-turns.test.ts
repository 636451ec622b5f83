import { describe, expect, it } from 'vitest';
import { AgentTurns } from '../../src/kernel/agent-turns.ts';

describe("an agent's turns, one at a time", () => {
  it('are idle once the running turn ends on I/O, though a turn queued behind it was aborted first (the daemon stopped without spinning)', async () => {
    const turns = new AgentTurns();
    let finish: () => void = () => undefined;
    const running = turns.run('agent', undefined, () => new Promise<string>((resolve) => (finish = () => resolve('done'))));
    const waiter = new AbortController();
    const queued = turns.run('agent', waiter.signal, () => Promise.resolve('never'));
    waiter.abort(new Error('the caller went away'));
    await expect(queued).rejects.toThrow('the caller went away');

    let idle = false;
    const idled = turns.idle().then(() => (idle = true));
    // A macrotask comes while idle waits: a wait on the settled queue alone would run on microtasks and never let it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    // The running turn ends on I/O (a macrotask), then the agent is idle.
    setImmediate(finish);
    await idled;
    expect(await running).toBe('done');
    expect(turns.isBusy('agent')).toBe(false);
  });
});
