import { type MessagePort, MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { installedPath } from '../config/installation.ts';
import type { SchemaDialect } from './json-schema.ts';
import type { SchemaBounds } from './schema-bounds.ts';

// The worker runs from the sources, in the built daemon too (see `installedPath`).
const WORKER_PATH = installedPath('src', 'validation', 'schema-check-worker.ts');

/**
 * The longest one check on the schema-check thread may take, in milliseconds, the daemon's main
 * thread waiting for it: past it the thread is stopped (a new one takes the next check) and the
 * value is refused unchecked. A check of an ordinary value takes well under a millisecond, and of
 * the largest value `MAX_CHECK_WORK` lets through a few hundred; a regular expression that
 * backtracks (`^(a|a)*$` on 30 characters) takes seconds, doubling with each character more.
 */
export const MAX_CHECK_MS = 1_000;

/** How much longer the first check on a new thread may take, in milliseconds: while the thread starts and loads Ajv. */
export const CHECK_THREAD_START_MS = 5_000;

/** The JavaScript heap of the schema-check thread, in MB: a value from the main thread is copied into it. */
export const CHECK_THREAD_HEAP_MB = 256;

/** One check, as the main thread sends it: the schema (compiled once per `schemaId` there), the value. */
export interface CheckJob {
  id: number;
  schemaId: number;
  schema: Readonly<Record<string, unknown>>;
  dialect: SchemaDialect;
  root: string;
  bounds: SchemaBounds;
  value: unknown;
}

/** The thread's answer: the problems (undefined when valid), or why it could not check. */
export type CheckAnswer = { id: number; problems: string | undefined } | { id: number; error: string };

/** What the thread is started with: where it answers, and the flag it raises once it has. */
export interface CheckThreadData {
  replies: MessagePort;
  signal: SharedArrayBuffer;
}

interface CheckThread {
  worker: Worker;
  replies: MessagePort;
  flag: Int32Array;
  /** Whether it has answered once (or come online): started, with Ajv loaded. */
  ready: boolean;
}

let thread: CheckThread | undefined;
let nextId = 0;

function start(): CheckThread {
  const channel = new MessageChannel();
  const signal = new SharedArrayBuffer(4);
  const workerData: CheckThreadData = { replies: channel.port2, signal };
  const worker = new Worker(WORKER_PATH, {
    workerData,
    transferList: [channel.port2],
    env: {},
    resourceLimits: { maxOldGenerationSizeMb: CHECK_THREAD_HEAP_MB, stackSizeMb: 4 },
  });
  const started: CheckThread = { worker, replies: channel.port1, flag: new Int32Array(signal), ready: false };
  // It never keeps the daemon's process alive, and one that dies is replaced by the next check.
  worker.unref();
  channel.port1.unref();
  worker.on('online', () => {
    started.ready = true;
  });
  worker.on('error', () => undefined);
  worker.on('exit', () => {
    if (thread === started) thread = undefined;
  });
  return started;
}

/** Starts the schema-check thread now, if it is not running, so that it is ready by the first check. */
export function startSchemaCheckThread(): void {
  thread ??= start();
}

/**
 * Checks `value` on the schema-check thread, the main thread waiting at most {@link MAX_CHECK_MS}
 * (plus {@link CHECK_THREAD_START_MS} while the thread starts): for schemas whose checks cost
 * what no bound on their size can tell, their regular expressions. Past the wait the thread is
 * stopped and the value refused, naming the limit. The wait is synchronous because every check
 * is (the tool runner's, a forged tool's output): what the thread adds is that a check that runs
 * too long can be stopped, which the main thread cannot do to itself.
 * @throws {Error} when the thread cannot compile the schema (the main thread compiled it first, so only on a thread fault).
 */
export function checkOnThread(job: Omit<CheckJob, 'id' | 'value'>, value: unknown): string | undefined {
  const current = thread ?? start();
  thread = current;
  nextId += 1;
  const id = nextId;
  Atomics.store(current.flag, 0, 0);
  current.worker.postMessage({ ...job, id, value } satisfies CheckJob);
  const allowed = MAX_CHECK_MS + (current.ready ? 0 : CHECK_THREAD_START_MS);
  const started = performance.now();
  for (;;) {
    const remaining = allowed - (performance.now() - started);
    if (remaining <= 0 || Atomics.wait(current.flag, 0, 0, remaining) === 'timed-out') {
      if (thread === current) thread = undefined;
      void current.worker.terminate();
      return `${job.root} could not be checked against the schema within ${MAX_CHECK_MS} ms (a "pattern" that backtracks?); Loom stops a check at ${MAX_CHECK_MS} ms (MAX_CHECK_MS)`;
    }
    Atomics.store(current.flag, 0, 0);
    for (let received = receiveMessageOnPort(current.replies); received !== undefined; received = receiveMessageOnPort(current.replies)) {
      const answer = received.message as CheckAnswer;
      if (answer.id !== id) continue;
      current.ready = true;
      if ('error' in answer) throw new Error(answer.error);
      return answer.problems;
    }
  }
}
