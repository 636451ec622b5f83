/** Structured logging (pino, JSON lines). */
export { createLogger, createSilentLogger, LOG_LEVELS } from './create-logger.ts';
export type { CreateLoggerOptions, LogLevel } from './create-logger.ts';
export { LOG_RING_CAPACITY, LogRing } from './log-ring.ts';
