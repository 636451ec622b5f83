import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { CodeModuleError } from '../../errors/index.ts';
import { type CodeModuleOptions, type CodeModuleRunner, withinLimit } from '../code-module-runner.ts';
import { answerHostCall, type HostCallPort } from '../host-calls.ts';
import { readReply } from '../protocol.ts';
import type { HostCallMessage, WasmWorkerData, WasmWorkerMessage } from './wasm-worker.ts';

const WORKER_URL = new URL('./wasm-worker.ts', import.meta.url);

/** The JavaScript heap of a module's thread (the module's own memory is capped apart, by `[code].memory_mb`). */
const WORKER_HEAP_MB = 48;

/** A running thread and what talks to it. */
interface Thread {
  worker: Worker;
  ready: Promise<void>;
  hostPort: MessagePort;
  flag: Int32Array;
  scratch: string;
  /** The message being answered: where the thread's next word goes. */
  pending?: { resolve: (json: string) => void; reject: (error: Error) => void; port: HostCallPort };
}

/**
 * A `wasm:` agent's module on its own thread: compiled once when the first message comes, a
 * fresh instance per message, stopped (and started again with the next message) when it runs
 * past its time limit, exhausts its thread, or the agent stops.
 */
export function createWasmAgent(options: CodeModuleOptions): CodeModuleRunner {
  const { path, name, limits, clock, logger } = options;
  const what = `agent "${name}"'s module`;
  let thread: Thread | undefined;

  function start(): Thread {
    const channel = new MessageChannel();
    const signal = new SharedArrayBuffer(4);
    const scratch = mkdtempSync(join(tmpdir(), 'loom-wasm-'));
    const workerData: WasmWorkerData = { path, name, memoryMb: limits.memoryMb, maxReplyBytes: limits.maxReplyBytes, env: options.env, scratch, hostPort: channel.port2, signal };
    const worker = new Worker(WORKER_URL, {
      workerData,
      transferList: [channel.port2],
      env: {},
      stdout: true,
      stderr: true,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 },
    });
    worker.unref();
    const started: Thread = { worker, ready: Promise.resolve(), hostPort: channel.port1, flag: new Int32Array(signal), scratch };
    started.ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (message: WasmWorkerMessage) => {
        switch (message.type) {
          case 'ready':
            resolve();
            return;
          case 'load-failed':
            reject(new CodeModuleError('load', `cannot load ${what} "${path}": ${message.message}`));
            return;
          case 'log':
            logger.info({ stream: 'stderr' }, message.message);
            return;
          case 'reply':
            started.pending?.resolve(message.json);
            return;
          case 'fault':
            started.pending?.reject(new CodeModuleError(message.fault, `${what} ${message.message.replace(/^the module /, '')}`));
            return;
        }
      });
      worker.on('error', (error: Error & { code?: string }) => {
        const fault =
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new CodeModuleError('memory', `${what} exhausted its thread's ${WORKER_HEAP_MB} MB heap and was stopped`, { cause: error })
            : new CodeModuleError('exited', `${what} stopped: ${error.message}`, { cause: error });
        reject(fault);
        started.pending?.reject(fault);
      });
      worker.on('exit', (code) => {
        if (thread === started) thread = undefined;
        rmSync(scratch, { recursive: true, force: true });
        const fault = new CodeModuleError('exited', `${what} stopped (its thread exited with code ${code})`);
        reject(fault);
        started.pending?.reject(fault);
      });
    });
    started.ready.catch(() => undefined);
    started.hostPort.on('message', (message: HostCallMessage) => {
      const pending = started.pending;
      const answered = pending === undefined ? Promise.resolve({ ok: false as const, error: 'no message is being answered' }) : answerHostCall(message.json, pending.port);
      void answered.then((result) => {
        started.hostPort.postMessage({ json: JSON.stringify(result) });
        Atomics.store(started.flag, 0, 1);
        Atomics.notify(started.flag, 0);
      });
    });
    started.hostPort.unref();
    return started;
  }

  async function stop(): Promise<void> {
    const current = thread;
    thread = undefined;
    if (current !== undefined) await current.worker.terminate();
  }

  return {
    async turn(request, port, signal) {
      thread ??= start();
      const current = thread;
      current.worker.ref();
      try {
        await current.ready;
        const reply = new Promise<string>((resolve, reject) => {
          current.pending = { resolve, reject, port };
        });
        current.worker.postMessage({ type: 'turn', request });
        const json = await withinLimit(reply, { clock, timeoutMs: limits.timeoutMs, signal, what, stop });
        return readReply(json, limits.maxReplyBytes, what);
      } finally {
        delete current.pending;
        current.worker.unref();
      }
    },
    close: stop,
  };
}
