import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { ClaimedJob, JobHandler, JobKind, JobRequest, Leadership, ScheduleRunRecord, WorkQueue } from '../../src/contracts/index.ts';
import { AgentNotFoundError } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { CONTINUOUS_WAKE_MESSAGE, createScheduler, intervalInstants } from '../../src/scheduler/index.ts';
import type { Wake } from '../../src/kernel/index.ts';
import { agentEntry, recordingSend } from './scheduler-fixtures.ts';

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

/** A work queue in memory: it records what is enqueued (once per dedupe key) and runs jobs when the test says. */
function testQueue(): WorkQueue & { jobs: (JobRequest & { id: string })[]; run(job: JobRequest & { id: string }, attempt?: number): Promise<void> } {
  const handlers = new Map<JobKind, JobHandler>();
  const jobs: (JobRequest & { id: string })[] = [];
  return {
    jobs,
    enqueue(request) {
      const found = request.dedupeKey === undefined ? undefined : jobs.find((job) => job.dedupeKey === request.dedupeKey);
      if (found !== undefined) return Promise.resolve({ id: found.id, created: false });
      const job = { ...request, id: `job-${jobs.length + 1}` };
      jobs.push(job);
      return Promise.resolve({ id: job.id, created: true });
    },
    handle(kind, handler) {
      handlers.set(kind, handler);
    },
    jobIds: (ids) => Promise.resolve(new Set(ids.filter((id) => jobs.some((job) => job.id === id)))),
    async run(job, attempt = 1) {
      const handler = handlers.get(job.kind);
      if (handler === undefined) throw new Error(`no handler for ${job.kind}`);
      const claimed: ClaimedJob = { id: job.id, kind: job.kind, payload: job.payload, attempt, maxAttempts: 3 };
      await handler(claimed, new AbortController().signal);
    },
  };
}

/** Wake-up runs that write down what the scheduler asks of them; `goesOn`: what `turnGoesOn` answers. */
function recordingRuns(calls: string[], goesOn: boolean) {
  return {
    run: (agentId: string, wake: Wake) => {
      calls.push(`run ${agentId} ${wake.trigger}@${wake.dueAt}`);
      return Promise.resolve({} as ScheduleRunRecord);
    },
    skip: (agentId: string, wake: Pick<Wake, 'trigger' | 'dueAt'>, reason: string) => {
      calls.push(`skip ${agentId} ${wake.trigger}@${wake.dueAt}: ${reason}`);
      return Promise.resolve({} as ScheduleRunRecord);
    },
    catchUpSince: () => Promise.resolve(Number.NEGATIVE_INFINITY),
    interruptEarlier: (agentId: string, wake: Pick<Wake, 'trigger' | 'dueAt'>) => {
      calls.push(`interrupt ${agentId} ${wake.trigger}@${wake.dueAt}`);
      return Promise.resolve([]);
    },
    turnGoesOn: () => Promise.resolve(goesOn),
  };
}

describe('scheduler with a work queue (several daemons on one database)', () => {
  it('enqueues each wake-up as a scheduled-message job named by its instant, and delivers the jobs it is given, skipping one whose agent is still busy here', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    const queue = testQueue();
    let finish: (() => void) | undefined;
    const { send, calls } = recordingSend(
      () => clock.now(),
      () => new Promise<void>((resolve) => (finish = resolve)),
    );
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send, leadership, queue });
    void scheduler.start(agentEntry('worker', '[schedule]\nmode = "continuous"\ninterval_seconds = 60\n'));
    const since = clock.now();
    await clock.advance(2 * MINUTE);
    // Nothing is sent by the leader itself: the wake-ups wait in the queue for a node to take them.
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
    const running = queue.run(first as JobRequest & { id: string });
    // The second arrives while the first is still going here: skipped, as on one daemon.
    await queue.run(second as JobRequest & { id: string });
    expect(calls.map((call) => call.message)).toEqual([CONTINUOUS_WAKE_MESSAGE]);
    finish?.();
    await running;
    scheduler.stopAll();
  });

  it('a wake-up job taken again (its first node died running it) marks the run its first attempt left running interrupted, then runs it', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    const calls: string[] = [];
    const runs = recordingRuns(calls, false);
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership: testLeadership(true), queue });
    const job = {
      id: 'job-1',
      kind: 'scheduled-message' as const,
      payload: { agent: 'id-worker', message: 'wake', cause: 'continuous', trigger: 'continuous', due: 60_000 },
    };
    await queue.run(job, 1);
    await queue.run(job, 2);
    expect(calls).toEqual(['run id-worker continuous@60000', 'interrupt id-worker continuous@60000', 'run id-worker continuous@60000']);
    scheduler.stopAll();
  });

  it('does not run a wake-up again whose earlier attempt began a turn the journal holds as running: that turn goes on where it stopped', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    const calls: string[] = [];
    const runs = recordingRuns(calls, true);
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, leadership: testLeadership(true), queue });
    const job = {
      id: 'job-1',
      kind: 'scheduled-message' as const,
      payload: { agent: 'id-worker', message: 'wake', cause: 'continuous', trigger: 'continuous', due: 60_000 },
    };
    await queue.run(job, 1);
    await queue.run(job, 2);
    expect(calls).toEqual([
      'run id-worker continuous@60000',
      'interrupt id-worker continuous@60000',
      'skip id-worker continuous@60000: the turn an earlier attempt began goes on from its journal, where its node stopped; the wake-up is not run twice',
    ]);
    scheduler.stopAll();
  });

  it("fails a wake-up job whose agent this node does not know (so another node may take it), and only logs the agent's own failures", async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const queue = testQueue();
    let error: Error = new AgentNotFoundError('id-elsewhere');
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send: () => Promise.reject(error), leadership: testLeadership(true), queue });
    const job = { id: 'job-1', kind: 'scheduled-message' as const, payload: { agent: 'id-elsewhere', message: 'wake', cause: 'continuous' } };
    await expect(queue.run(job)).rejects.toThrow('no agent named or with id "id-elsewhere"');
    error = new Error('the model failed');
    await expect(queue.run(job)).resolves.toBeUndefined();
    await expect(queue.run({ ...job, payload: { agent: 'x' } })).rejects.toThrow(/^cannot run job "job-1": its payload is not a scheduled message/);
    scheduler.stopAll();
  });
});

describe('scheduler with a leadership (several daemons on one database)', () => {
  it('runs nothing while another node leads, starts when this one leads, and stops at once when it no longer does', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(false);
    const { send, calls } = recordingSend(() => clock.now());
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send, leadership });
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
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send: () => Promise.resolve(), leadership });
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
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send: () => Promise.resolve(), leadership });
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
