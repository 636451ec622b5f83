import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { installedPath } from '../../config/installation.ts';
import type { Clock, Logger } from '../../contracts/index.ts';
import { CodeModuleError } from '../../errors/index.ts';
import { waitForStop } from '../code-module-runner.ts';
import { answerHostCall, type HostCallPort } from '../host-calls.ts';
import type { PreparedModule } from './wasm-abi.ts';
import type { HostCallMessage, WasmJob, WasmWorkerData, WasmWorkerMessage } from './wasm-worker.ts';

// The worker runs from the sources, in the built daemon too (see `installedPath`).
const WORKER_PATH = installedPath('src', 'code-modules', 'wasm', 'wasm-worker.ts');

/** The JavaScript heap of a pool thread (a module's own memory is capped apart, by `[code].memory_mb`). */
export const WASM_THREAD_HEAP_MB = 48;

/** One message for the pool: the module, its limits, the request, where its host calls and log lines go. */
export interface PoolJob {
  moduleId: number;
  module: PreparedModule;
  name: string;
  memoryMb: number;
  maxReplyBytes: number;
  env: Record<string, string>;
  request: string;
  port: HostCallPort;
  logger: Logger;
  /** How the module is named in messages (`agent "x"'s module`). */
  what: string;
}

/** A message running on a thread: its answer, and a way to stop it. */
export interface PoolRun {
  reply: Promise<string>;
  /** Terminates the thread (a module past its time limit, an agent stopped); the pool goes on without it. */
  stop(): Promise<void>;
}

interface Thread {
  worker: Worker;
  hostPort: MessagePort;
  flag: Int32Array;
  /** The modules this thread has been sent. */
  modules: Set<number>;
  job?: { spec: PoolJob; resolve: (json: string) => void; reject: (error: Error) => void };
}

/**
 * The threads `wasm:` agents' modules run on, shared by every agent: a message takes an idle
 * thread (or a new one), so a module that spins holds one thread until its time limit and the
 * others go on. Threads stay warm between messages (up to one per core idle); a thread that
 * served a module keeps it, so it is sent once.
 */
export interface WasmPool {
  run(job: PoolJob): PoolRun;
  close(): Promise<void>;
}

/**
 * @param options.clock the daemon's clock: `close` waits a bounded time of it for threads to stop
 *   ({@link waitForStop}; one asleep in a native call may not).
 */
export function createWasmPool(options: { clock: Clock; idleThreads?: number }): WasmPool {
  const { clock } = options;
  const idleThreads = options.idleThreads ?? Math.max(1, availableParallelism());
  const idle: Thread[] = [];
  const all = new Set<Thread>();

  function start(): Thread {
    const channel = new MessageChannel();
    const signal = new SharedArrayBuffer(4);
    const scratch = mkdtempSync(join(tmpdir(), 'loom-wasm-'));
    const workerData: WasmWorkerData = { scratch, hostPort: channel.port2, signal };
    const worker = new Worker(WORKER_PATH, {
      workerData,
      transferList: [channel.port2],
      env: {},
      stdout: true,
      stderr: true,
      resourceLimits: { maxOldGenerationSizeMb: WASM_THREAD_HEAP_MB, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 },
    });
    const thread: Thread = { worker, hostPort: channel.port1, flag: new Int32Array(signal), modules: new Set() };
    all.add(thread);
    worker.unref();
    worker.on('message', (message: WasmWorkerMessage) => {
      const job = thread.job;
      if (job === undefined) return;
      const { spec } = job;
      switch (message.type) {
        case 'log':
          spec.logger.info({ stream: 'stderr' }, message.message);
          return;
        case 'missing-module':
          // The thread let it go to keep others: send it again.
          thread.modules.add(spec.moduleId);
          worker.postMessage(jobMessage(spec, true));
          return;
        case 'reply':
          finish(thread).resolve(message.json);
          return;
        case 'fault':
          finish(thread).reject(new CodeModuleError(message.fault, `${spec.what} ${message.message.replace(/^the module /, '')}`));
          return;
      }
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const what = thread.job?.spec.what ?? 'a module';
      const fault =
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new CodeModuleError('memory', `${what} exhausted its thread's ${WASM_THREAD_HEAP_MB} MB heap and was stopped`, { cause: error })
          : new CodeModuleError('exited', `${what} stopped: ${error.message}`, { cause: error });
      thread.job?.reject(fault);
    });
    worker.on('exit', (code) => {
      discard(thread);
      rmSync(scratch, { recursive: true, force: true });
      thread.job?.reject(new CodeModuleError('exited', `${thread.job.spec.what} stopped (its thread exited with code ${code})`));
    });
    thread.hostPort.on('message', (message: HostCallMessage) => {
      const job = thread.job;
      const answered =
        job === undefined ? Promise.resolve({ ok: false as const, error: 'no message is being answered' }) : answerHostCall(message.json, job.spec.port);
      void answered.then((result) => {
        thread.hostPort.postMessage({ json: JSON.stringify(result) });
        Atomics.store(thread.flag, 0, 1);
        Atomics.notify(thread.flag, 0);
      });
    });
    thread.hostPort.unref();
    return thread;
  }

  function jobMessage(spec: PoolJob, withModule: boolean): WasmJob {
    const { moduleId, name, memoryMb, maxReplyBytes, env, request } = spec;
    return { type: 'turn', moduleId, name, memoryMb, maxReplyBytes, env, request, ...(withModule ? { module: spec.module } : {}) };
  }

  /** Ends a thread's message and gives the thread back (idle, or gone when enough are idle). */
  function finish(thread: Thread): { resolve: (json: string) => void; reject: (error: Error) => void } {
    const job = thread.job as NonNullable<Thread['job']>;
    delete thread.job;
    thread.worker.unref();
    if (idle.length < idleThreads) idle.push(thread);
    else void stopThread(thread);
    return job;
  }

  function discard(thread: Thread): void {
    all.delete(thread);
    const index = idle.indexOf(thread);
    if (index !== -1) idle.splice(index, 1);
  }

  async function stopThread(thread: Thread): Promise<void> {
    discard(thread);
    // A thread asleep in a native call stops only when it wakes (if ever): meanwhile it must not
    // keep the daemon's process alive (a process exits with such a thread still there).
    thread.worker.unref();
    await thread.worker.terminate();
  }

  return {
    run(spec) {
      const thread = idle.pop() ?? start();
      const reply = new Promise<string>((resolve, reject) => {
        thread.job = { spec, resolve, reject };
      });
      const withModule = !thread.modules.has(spec.moduleId);
      thread.modules.add(spec.moduleId);
      thread.worker.ref();
      thread.worker.postMessage(jobMessage(spec, withModule));
      return { reply, stop: () => stopThread(thread) };
    },
    async close() {
      await waitForStop(
        Promise.all([...all].map((thread) => stopThread(thread))).then(() => undefined),
        clock,
      );
    },
  };
}
