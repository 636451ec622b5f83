import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { JobRequest, Leadership } from '../../src/contracts/index.ts';
import { AgentNotFoundError } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { CONTINUOUS_WAKE_MESSAGE, createScheduler, intervalInstants } from '../../src/scheduler/index.ts';
import { agentEntry, deferred, recordingRuns, testQueue } from './scheduler-fixtures.ts';

const MINUTE = 60_000;

/** A leadership the test hands over and takes back, granting each instant once and in order (as the database does). */
function testLeadership(leading: boolean): Leadership & { set(value: boolean): void; claims: { key: string; at: number }[]; refuse: Set<number> } {
  const listeners = new Set<(leader: boolean) => void>();
  const newest = new Map<string, number>();
  const claims: { key: string; at: number }[] = [];
  const refuse = new Set<number>();
  return {
    claims,
    refuse,
    isLeader: () => leading,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    claim(key, at) {
      if (!leading || refuse.has(at) || (newest.get(key) ?? Number.NEGATIVE_INFINITY) >= at) return Promise.resolve(false);
      newest.set(key, at);
      claims.push({ key, at });
      return Promise.resolve(true);
    },
    othersAlive: () => Promise.resolve(true),
    set(value) {
      leading = value;
      for (const listener of listeners) listener(value);
    },
  };
}

describe('scheduler with a work queue (several daemons on one database)', () => {
  it('enqueues each wake-up as a scheduled-message job named by its instant, and runs the jobs it is given, each as its own wake-up', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    const queue = testQueue();
    const finish = deferred();
    const { runs, calls, steps } = recordingRuns(
      () => clock.now(),
      () => finish.promise,
    );
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership, queue });
    void scheduler.start(agentEntry('worker', '[schedule]\nmode = "continuous"\ninterval_seconds = 60\n'));
    const since = clock.now();
    await clock.advance(2 * MINUTE);
    // Nothing is run by the leader itself: the wake-ups wait in the queue for a node to take them.
    expect(calls).toEqual([]);
    expect(queue.jobs.map((job) => [job.kind, job.dedupeKey, job.payload])).toEqual([
      [
        'scheduled-message',
        `agent id-worker continuous@${since + MINUTE}`,
        { agent: 'id-worker', message: CONTINUOUS_WAKE_MESSAGE, cause: 'continuous', trigger: 'continuous', due: since + MINUTE },
      ],
      [
        'scheduled-message',
        `agent id-worker continuous@${since + 2 * MINUTE}`,
        { agent: 'id-worker', message: CONTINUOUS_WAKE_MESSAGE, cause: 'continuous', trigger: 'continuous', due: since + 2 * MINUTE },
      ],
    ]);
    const [first, second] = queue.jobs;
    // The second is handed over while the first still goes: the runs skip it, as on one daemon (test/scheduler/wake-up-runs.test.ts).
    const running = [queue.run(first as JobRequest & { id: string }), queue.run(second as JobRequest & { id: string })];
    expect(steps).toEqual([`run id-worker continuous@${since + MINUTE}`, `run id-worker continuous@${since + 2 * MINUTE}`]);
    expect(calls.map((call) => call.message)).toEqual([CONTINUOUS_WAKE_MESSAGE, CONTINUOUS_WAKE_MESSAGE]);
    finish.resolve();
    await Promise.all(running);
    scheduler.stopAll();
  });

  it('a wake-up job taken again (its first node died running it) marks the run its first attempt left running interrupted, then runs it', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    const { runs, steps } = recordingRuns(() => clock.now());
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership: testLeadership(true), queue });
    const job = {
      id: 'job-1',
      kind: 'scheduled-message' as const,
      payload: { agent: 'id-worker', message: 'wake', cause: 'continuous', trigger: 'continuous', due: 60_000 },
    };
    await queue.run(job, 1);
    await queue.run(job, 2);
    expect(steps).toEqual(['run id-worker continuous@60000', 'interrupt id-worker continuous@60000', 'run id-worker continuous@60000']);
    scheduler.stopAll();
  });

  it('does not run a wake-up again whose earlier attempt began a turn the journal holds as running: that turn goes on where it stopped', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    const { runs, steps } = recordingRuns(() => clock.now(), undefined, true);
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership: testLeadership(true), queue });
    const job = {
      id: 'job-1',
      kind: 'scheduled-message' as const,
      payload: { agent: 'id-worker', message: 'wake', cause: 'continuous', trigger: 'continuous', due: 60_000 },
    };
    await queue.run(job, 1);
    await queue.run(job, 2);
    expect(steps).toEqual([
      'run id-worker continuous@60000',
      'interrupt id-worker continuous@60000',
      'skip id-worker continuous@60000: the turn an earlier attempt began goes on from its journal, where its node stopped; the wake-up is not run twice',
    ]);
    scheduler.stopAll();
  });

  it('fails a wake-up job whose agent this node does not know (so another node may take it), and one that is not a scheduled message', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    let known = false;
    const { runs, calls } = recordingRuns(
      () => clock.now(),
      (call) => (known ? Promise.resolve() : Promise.reject(new AgentNotFoundError(call.agentId))),
    );
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership: testLeadership(true), queue });
    const job = { id: 'job-1', kind: 'scheduled-message' as const, payload: { agent: 'id-elsewhere', message: 'wake', cause: 'continuous' } };
    await expect(queue.run(job)).rejects.toThrow('no agent named or with id "id-elsewhere"');
    // The agent's own failures (a failed turn, a budget's refusal) are runs the runs record, and the job ends.
    known = true;
    await expect(queue.run(job)).resolves.toBeUndefined();
    expect(calls.map((call) => [call.agentId, call.message])).toEqual([
      ['id-elsewhere', 'wake'],
      ['id-elsewhere', 'wake'],
    ]);
    await expect(queue.run({ ...job, payload: { agent: 'x' } })).rejects.toThrow(/^cannot run job "job-1": its payload is not a scheduled message/);
    scheduler.stopAll();
  });
});

describe('scheduler with a leadership (several daemons on one database)', () => {
  it('runs nothing while another node leads, starts when this one leads, and stops at once when it no longer does', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(false);
    const { runs, calls } = recordingRuns(() => clock.now());
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership });
    const fired: number[] = [];
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    void scheduler.start(agentEntry('worker', '[schedule]\nmode = "continuous"\ninterval_seconds = 60\n'));

    await clock.advance(5 * MINUTE);
    expect(calls).toEqual([]);
    expect(fired).toEqual([]);

    leadership.set(true);
    const since = clock.now();
    await clock.advance(3 * MINUTE);
    expect(fired).toEqual([since + MINUTE, since + 2 * MINUTE, since + 3 * MINUTE]);
    expect(calls.map((call) => [call.agentId, call.message])).toEqual([
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
    ]);
    expect(leadership.claims.filter((claim) => claim.key === 'package beat/check').map((claim) => claim.at)).toEqual(fired);
    expect(leadership.claims.filter((claim) => claim.key === 'agent id-worker continuous')).toHaveLength(3);

    leadership.set(false);
    await clock.advance(5 * MINUTE);
    expect(fired).toHaveLength(3);
    expect(calls).toHaveLength(3);

    // Leading again picks up what it was given, from then on.
    leadership.set(true);
    await clock.advance(MINUTE);
    expect(fired).toHaveLength(4);
    expect(calls).toHaveLength(4);
    scheduler.stopAll();
  });

  it('does not fire an instant whose claim is refused (another node fired it), and fires the next one', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs: recordingRuns(() => clock.now()).runs, leadership });
    const fired: number[] = [];
    const start = clock.now();
    leadership.refuse.add(start + 2 * MINUTE);
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    await clock.advance(3 * MINUTE);
    expect(fired).toEqual([start + MINUTE, start + 3 * MINUTE]);
    scheduler.stopAll();
  });

  it('does not fire an instant while the claim cannot be made (the database is unreachable), and goes on afterwards', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    let reachable = false;
    const grant = leadership.claim.bind(leadership);
    leadership.claim = (key, at) => (reachable ? grant(key, at) : Promise.reject(new Error('connection refused')));
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs: recordingRuns(() => clock.now()).runs, leadership });
    const fired: number[] = [];
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    await clock.advance(2 * MINUTE);
    expect(fired).toEqual([]);
    reachable = true;
    await clock.advance(MINUTE);
    expect(fired).toHaveLength(1);
    scheduler.stopAll();
  });
});
