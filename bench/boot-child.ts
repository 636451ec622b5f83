// Boots a kernel over an existing database in a fresh process and prints what it cost, as JSON.
// Run with --expose-gc so the memory figures are of live objects, not garbage.
import { performance } from 'node:perf_hooks';
import { openBenchKernel } from './bench-kernel.ts';

const databasePath = process.argv[2];
if (databasePath === undefined) throw new Error('usage: boot-child.ts <database>');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

gc();
const before = process.memoryUsage();
const started = performance.now();
const bench = await openBenchKernel(databasePath);
const bootMs = performance.now() - started;
gc();
const after = process.memoryUsage();
const agents = bench.kernel.list().length;
console.log(
  JSON.stringify({
    boot_ms: bootMs,
    agents,
    rss_delta_bytes: after.rss - before.rss,
    heap_delta_bytes: after.heapUsed - before.heapUsed,
  }),
);
await bench.dispose();
