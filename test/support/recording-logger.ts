import type { LogBindings, Logger } from '../../src/contracts/index.ts';

/** A line a recording logger received. */
export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  bindings: LogBindings;
  message: string | undefined;
}

/** A logger that keeps every line, for tests that assert on logging or wait for a line. */
export interface RecordingLogger extends Logger {
  entries: LogEntry[];
  /** Resolves with the next line at `level` written after the call. */
  next(level: LogEntry['level']): Promise<LogEntry>;
}

/** A logger that records lines in memory instead of writing them. */
export function createRecordingLogger(): RecordingLogger {
  const entries: LogEntry[] = [];
  const waiters: { level: LogEntry['level']; resolve: (entry: LogEntry) => void }[] = [];
  const make = (context: LogBindings): Logger => {
    const write = (level: LogEntry['level']) => (bindings: LogBindings, message?: string) => {
      const entry = { level, bindings: { ...context, ...bindings }, message };
      entries.push(entry);
      for (const waiter of waiters.filter((candidate) => candidate.level === level)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
    };
    return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'), child: (more) => make({ ...context, ...more }) };
  };
  return {
    ...make({}),
    entries,
    next: (level) => new Promise((resolve) => waiters.push({ level, resolve })),
  };
}
