import { readFile } from 'node:fs/promises';
import { CodeModuleError } from '../../errors/index.ts';
import { type CodeModuleOptions, type CodeModuleRunner, withinLimit } from '../code-module-runner.ts';
import { readReply } from '../protocol.ts';
import { type PreparedModule, prepareWasmModule } from './wasm-abi.ts';
import type { WasmPool } from './wasm-pool.ts';

/** Ids for compiled modules, unique in the process (a thread keeps what it was sent by id). */
let nextModuleId = 1;

/**
 * A `wasm:` agent's module: read and compiled (its memory capped) with the first message, then
 * run on the shared pool's threads, a fresh instance per message. A message past the time limit,
 * or one its agent's stop interrupts, terminates its thread.
 */
export function createWasmAgent(options: CodeModuleOptions & { pool: WasmPool }): CodeModuleRunner {
  const { path, name, limits, clock, logger, pool } = options;
  const what = `agent "${name}"'s module`;
  let prepared: Promise<{ id: number; module: PreparedModule }> | undefined;

  function load(): Promise<{ id: number; module: PreparedModule }> {
    prepared ??= (async () => {
      try {
        return { id: nextModuleId++, module: await prepareWasmModule(await readFile(path), limits.memoryMb) };
      } catch (error) {
        prepared = undefined;
        throw new CodeModuleError('load', `cannot load ${what} "${path}": ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    })();
    return prepared;
  }

  return {
    async turn(request, port, signal) {
      const { id, module } = await load();
      const run = pool.run({
        moduleId: id,
        module,
        name,
        memoryMb: limits.memoryMb,
        maxReplyBytes: limits.maxReplyBytes,
        env: options.env,
        request,
        port,
        logger,
        what,
      });
      const json = await withinLimit(run.reply, { clock, timeoutMs: limits.timeoutMs, signal, what, stop: () => run.stop() });
      return readReply(json, limits.maxReplyBytes, what);
    },
    close: () => Promise.resolve(),
  };
}
