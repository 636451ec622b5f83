import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: Collect | null | undefined;

/**
 * V8's own collector, reached without `--expose-gc` on every command line that starts a daemon:
 * the flag is set, a fresh context hands out its `gc`, and the flag is cleared at once, so that no
 * later context (a sandbox's) gets a `gc` of its own. `null` where this Node hands out none.
 */
function collector(): Collect | null {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc');
    try {
      collect = runInNewContext('typeof gc === "function" ? gc : null') as Collect | null;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  return collect;
}

/**
 * Gives back the memory that start-up grew and no longer uses: one full collection that reduces
 * the heap (V8's "last resort" flavour, the one it runs under memory pressure).
 *
 * Start-up allocates fast enough that V8 grows the young generation to its largest semi-spaces
 * (~19 MB of pages), but triggers no full collection; V8 shrinks the young generation, and starts
 * the memory reducer that trims the heap of a process gone idle, only after one. Without it an
 * idle daemon keeps those pages for good (measured: 109 → 90 MB resident with 100 agents, a
 * ~10-30 ms pause once; `npm run bench -- idle-rss`). Under load the young generation grows back
 * as V8 sees fit. Returns whether it could collect (a Node without the way in above loses only
 * the memory, never the daemon).
 */
export function releaseStartUpHeap(): boolean {
  const collectNow = collector();
  collectNow?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return collectNow !== null;
}
