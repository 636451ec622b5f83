import { pino } from 'pino';
import type { Logger } from '../contracts/index.ts';
import type { LogRing } from './log-ring.ts';

/** Log levels, most verbose first. `silent` writes nothing. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Options for {@link createLogger}. */
export interface CreateLoggerOptions {
  level?: LogLevel;
  /** A file descriptor to write JSON lines to; standard error by default. */
  fd?: number;
  /** Also keeps the records at info and above here (for event-log agents), whatever `level` says. */
  ring?: LogRing;
}

/** A pino logger writing JSON lines, one per entry, synchronously (nothing lost on exit). */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const destination = pino.destination({ fd: options.fd ?? 2, sync: true });
  const settings = { base: null, timestamp: pino.stdTimeFunctions.isoTime };
  const { ring } = options;
  if (ring === undefined) return pino({ ...settings, level }, destination);
  const streams: pino.StreamEntry[] = [{ level: 'info', stream: { write: (line: string) => ring.pushLine(line) } }];
  if (level !== 'silent') streams.push({ level, stream: destination });
  // The logger lets through what either stream wants; each stream keeps its own level.
  return pino({ ...settings, level: level === 'debug' ? 'debug' : 'info' }, pino.multistream(streams));
}

/** A logger that writes nothing. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
