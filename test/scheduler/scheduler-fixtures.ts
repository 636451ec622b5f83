import type { ClaimedJob, JobHandler, JobKind, JobRequest, ScheduleRunRecord, WorkQueue } from '../../src/contracts/index.ts';
import type { AgentEntry, Wake } from '../../src/kernel/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import type { FileChangeListener, SchedulerOptions, WatchFiles } from '../../src/scheduler/index.ts';

/** A running agent entry whose manifest is parsed from TOML (the name is prepended). */
export function agentEntry(name: string, scheduleToml: string, id = `id-${name}`): AgentEntry {
  const { manifest } = parseManifest(`name = "${name}"\n${scheduleToml}`, { source: `${name}.toml` });
  return {
    id,
    name,
    state: 'running',
    parentId: null,
    ancestors: [],
    children: new Set(),
    sessionId: `session-${name}`,
    manifest,
    capabilities: [],
    createdAt: 0,
    updatedAt: 0,
  };
}

/** One wake-up the recording `runs` was asked to run, with the clock time it was asked at and the wake's message. */
export interface RunCall {
  agentId: string;
  message: string;
  at: number;
  wake: Wake;
}

/** The kernel's wake-up runs as the scheduler uses them (see `SchedulerOptions.runs`). */
export type SchedulerRuns = SchedulerOptions['runs'];

/**
 * Wake-up runs that record each `run` (and resolve, or do what `respond` says), with nothing to
 * catch up; `steps` says every call in order (`run`, `skip`, `interrupt`), and `turnGoesOn`
 * answers `goesOn`. The kernel's own rules (a wake-up skipped while the previous one still goes,
 * a budget's refusal, a failed turn recorded) are its tests': see test/scheduler/wake-up-runs.test.ts.
 */
export function recordingRuns(
  now: () => number,
  respond: (call: RunCall) => Promise<unknown> = () => Promise.resolve(),
  goesOn = false,
): { runs: SchedulerRuns; calls: RunCall[]; steps: string[] } {
  const calls: RunCall[] = [];
  const steps: string[] = [];
  const record = {} as ScheduleRunRecord;
  return {
    calls,
    steps,
    runs: {
      // Not async: a `respond` that throws throws from `run` itself.
      run: (agentId, wake) => {
        const call = { agentId, message: wake.message, at: now(), wake };
        calls.push(call);
        steps.push(`run ${agentId} ${wake.trigger}@${wake.dueAt}`);
        return respond(call).then(() => record);
      },
      skip: (agentId, wake, reason) => {
        steps.push(`skip ${agentId} ${wake.trigger}@${wake.dueAt}: ${reason}`);
        return Promise.resolve(record);
      },
      interruptEarlier: (agentId, wake) => {
        steps.push(`interrupt ${agentId} ${wake.trigger}@${wake.dueAt}`);
        return Promise.resolve([]);
      },
      turnGoesOn: () => Promise.resolve(goesOn),
      // Nothing was missed: the daemon starts now.
      catchUpSince: () => Promise.resolve(now()),
    },
  };
}

/** A work queue in memory: it records what is enqueued (once per dedupe key) and runs jobs when the test says. */
export function testQueue(): WorkQueue & { jobs: (JobRequest & { id: string })[]; run(job: JobRequest & { id: string }, attempt?: number): Promise<void> } {
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

/** A promise with its resolve and reject in hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/** One directory the fake watcher was asked to watch. */
export interface FakeWatch {
  directory: string;
  onChange: FileChangeListener;
  closed: boolean;
}

/** An injectable {@link WatchFiles} that records watches; tests report changes with `emit`. */
export function createFakeWatcher(): { watch: WatchFiles; watches: FakeWatch[]; emit(path: string, exists?: boolean): void } {
  const watches: FakeWatch[] = [];
  return {
    watches,
    watch: (directory, onChange) => {
      const entry: FakeWatch = { directory, onChange, closed: false };
      watches.push(entry);
      return () => {
        entry.closed = true;
      };
    },
    emit: (path, exists = true) => {
      for (const entry of watches) if (!entry.closed) entry.onChange(path, exists);
    },
  };
}
