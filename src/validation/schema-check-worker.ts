/**
 * The schema-check thread (see schema-check-thread.ts): checks values against schemas the main
 * thread measured and compiled first, one at a time, answering on its port and raising the shared
 * flag the main thread waits on.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { compileAjvCheck } from './ajv-check.ts';
import type { SchemaCheck } from './json-schema.ts';
import type { CheckAnswer, CheckJob, CheckThreadData } from './schema-check-thread.ts';

/** How many compiled schemas the thread keeps; past it, it forgets them all and compiles again as asked. */
const KEPT_SCHEMAS = 500;

const { replies, signal } = workerData as CheckThreadData;
const flag = new Int32Array(signal);
const checks = new Map<number, SchemaCheck>();

parentPort?.on('message', (job: CheckJob) => {
  let answer: CheckAnswer;
  try {
    let check = checks.get(job.schemaId);
    if (check === undefined) {
      if (checks.size >= KEPT_SCHEMAS) checks.clear();
      check = compileAjvCheck(job.schema, job);
      checks.set(job.schemaId, check);
    }
    answer = { id: job.id, problems: check(job.value) };
  } catch (error) {
    answer = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  replies.postMessage(answer);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
