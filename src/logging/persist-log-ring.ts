import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { Clock, LogEntry } from '../contracts/index.ts';
import { safeParseJson } from '../validation/index.ts';
import type { LogRing } from './log-ring.ts';

/** How long after a record the ring's file is written: records arriving meanwhile go with it, in one append. */
export const LOG_RING_FLUSH_DELAY_MS = 1_000;

/** A ring file larger than this is not read back (it is rewritten at the next flush). */
const MAX_RING_FILE_BYTES = 8 * 1024 * 1024;

/** A record as the ring's file holds it, checked as it is read back. */
const StoredEntrySchema = z.object({
  at: z.number(),
  level: z.enum(['info', 'warn', 'error', 'fatal']),
  category: z.string(),
  message: z.string(),
  agentId: z.string().optional(),
});

/** Options of {@link persistLogRing}. */
export interface PersistLogRingOptions {
  /** The ring's file (JSON lines), e.g. `logs/log-ring.jsonl` in the Loom home. */
  file: string;
  /** The clock the writes are timed on. */
  clock: Clock;
  /** How long a record waits to be written, so records come in one append (default {@link LOG_RING_FLUSH_DELAY_MS}). */
  delayMs?: number;
  /** Told of a write that failed (the records stay in the ring and go with the next write). */
  onError?: (error: unknown) => void;
}

/** A ring kept in a file. */
export interface PersistedLogRing {
  /** How many records were read back from the file. */
  readonly restored: number;
  /** Writes what is waiting now. */
  flush(): Promise<void>;
  /**
   * Writes what is waiting (unless `write` is false: a daemon that did not start must not write
   * into the file of one that runs) and stops writing.
   */
  close(options?: { write?: boolean }): Promise<void>;
}

/**
 * Keeps `ring` across a restart: the records in `file` (the last `ring.capacity` of them) are read
 * back into it first, then every record the ring takes is appended to the file, off the hot path:
 * a push only notes the record, and a write `delayMs` later appends all that came meanwhile. The
 * file is bounded: past twice the ring's capacity in lines it is rewritten with the ring's
 * records alone (to a new file, renamed over the old). Lines that do not read as records are
 * skipped.
 */
export async function persistLogRing(ring: LogRing, options: PersistLogRingOptions): Promise<PersistedLogRing> {
  const { file, clock } = options;
  const delayMs = options.delayMs ?? LOG_RING_FLUSH_DELAY_MS;
  const text = await readFile(file, 'utf8').catch(() => '');
  const stored =
    text.length > MAX_RING_FILE_BYTES
      ? []
      : text.split('\n').flatMap((line): LogEntry[] => {
          const parsed = safeParseJson(line);
          const entry = parsed.ok ? StoredEntrySchema.safeParse(parsed.value) : undefined;
          return entry?.success === true ? [entry.data] : [];
        });
  const restored = stored.slice(-ring.capacity);
  for (const entry of restored) ring.push(entry);

  let lines = stored.length;
  let pending: LogEntry[] = [];
  let writing: Promise<void> = Promise.resolve();
  let timer: AbortController | undefined;
  let closed = false;

  const write = async (entries: readonly LogEntry[]): Promise<void> => {
    await mkdir(dirname(file), { recursive: true });
    if (lines + entries.length > 2 * ring.capacity) {
      // Oldest first, as appended.
      const kept = ring.entries().reverse();
      await writeFile(`${file}.new`, kept.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
      await rename(`${file}.new`, file);
      lines = kept.length;
      return;
    }
    await appendFile(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
    lines += entries.length;
  };

  const flush = (): Promise<void> => {
    timer?.abort();
    timer = undefined;
    const entries = pending;
    pending = [];
    if (entries.length === 0) return writing;
    writing = writing.then(() =>
      write(entries).catch((error: unknown) => {
        // Kept for the next write.
        pending = [...entries, ...pending];
        options.onError?.(error);
      }),
    );
    return writing;
  };

  ring.onPush((entry) => {
    if (closed) return;
    pending.push(entry);
    if (timer !== undefined) return;
    const waiting = new AbortController();
    timer = waiting;
    clock.sleep(delayMs, { signal: waiting.signal }).then(
      () => {
        if (timer === waiting) void flush();
      },
      () => undefined,
    );
  });

  return {
    restored: restored.length,
    flush,
    async close(closeOptions = {}) {
      if (closeOptions.write === false) {
        timer?.abort();
        pending = [];
      }
      await flush();
      closed = true;
    },
  };
}
