/** Structured logging (pino, JSON lines). */
export { createLogger, createSilentLogger, LOG_FORMATS, LOG_LEVELS } from './create-logger.ts';
export type { CreateLoggerOptions, LogFormat, LogLevel, LogSink } from './create-logger.ts';
export { LOG_RING_CAPACITY, LogRing } from './log-ring.ts';
export { LOG_RING_FLUSH_DELAY_MS, persistLogRing } from './persist-log-ring.ts';
export type { PersistedLogRing, PersistLogRingOptions } from './persist-log-ring.ts';
