import { pino } from 'pino';
import type { Logger } from '../contracts/index.ts';

/** Log levels, most verbose first. `silent` writes nothing. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Options for {@link createLogger}. */
export interface CreateLoggerOptions {
  level?: LogLevel;
  /** A file descriptor to write JSON lines to; standard error by default. */
  fd?: number;
}

/** A pino logger writing JSON lines, one per entry, synchronously (nothing lost on exit). */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  return pino(
    { level: options.level ?? 'info', base: null, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd: options.fd ?? 2, sync: true }),
  );
}

/** A logger that writes nothing. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
