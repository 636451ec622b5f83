import { createRequire } from 'node:module';
import { pino } from 'pino';
import type * as PinoPretty from 'pino-pretty';
import type { LogBindings, Logger } from '../contracts/index.ts';
import { safeParseJson } from '../validation/index.ts';
import type { LogRing } from './log-ring.ts';

/** Log levels, most verbose first. `silent` writes nothing. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How a console stream is written: JSON lines, or one readable line per record (pino-pretty). */
export const LOG_FORMATS = ['json', 'pretty'] as const;

/** A console log format. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Something text can be written to: a stream, or a test's collector. */
export interface LogSink {
  write(text: string): unknown;
}

/** Options for {@link createLogger}. */
export interface CreateLoggerOptions {
  level?: LogLevel;
  /** A file descriptor to write the console output to; standard error by default. */
  fd?: number;
  /** Where the console output goes instead of `fd` (tests). */
  sink?: LogSink;
  /** The console output: JSON lines (the default) or readable lines; `none` writes only to `file` and `ring`. */
  format?: LogFormat | 'none';
  /** Colours in readable lines (for a terminal). */
  colorize?: boolean;
  /** Also appends JSON lines at `level` to this file (its folder is created). */
  file?: string;
  /** Also keeps the records at info and above here (for event-log agents), whatever `level` says. */
  ring?: LogRing;
}

/** Fields a readable line leaves out: shown otherwise (component) or noise in a terminal (ids of runs and calls). */
const PRETTY_IGNORED = 'pid,hostname,component,subsystem,err,runId,toolCallId';

/**
 * One readable line per record: `12:00:01.123 WARN  http: an HTTP request failed: … {"agentId":"…"}`.
 * An error's message is told, not its stack (the JSON lines in the log file keep the stack).
 */
function prettyLines(colorize: boolean): (line: string) => string {
  // Loaded only for a terminal: a daemon writing JSON lines never holds it.
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  const pretty = prettyFactory({
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: PRETTY_IGNORED,
    messageFormat: (log, messageKey) => {
      const source = [log['component'], log['subsystem']].find((value): value is string => typeof value === 'string');
      const message = typeof log[messageKey] === 'string' ? log[messageKey] : '';
      const error = log['err'] as { message?: unknown } | undefined;
      const cause = typeof error?.message === 'string' && error.message !== '' && !message.includes(error.message) ? ` (${error.message})` : '';
      return `${source === undefined ? '' : `${source}: `}${message}${cause}`;
    },
  });
  return (line) => {
    const parsed = safeParseJson(line);
    if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return pretty(line);
    const record = parsed.value as Record<string, unknown>;
    const message = typeof record['msg'] === 'string' ? record['msg'] : '';
    // A field adds nothing when it is empty or its value is already in the message.
    for (const [key, value] of Object.entries(record)) {
      if (key === 'msg' || key === 'level' || key === 'time') continue;
      if (value === null || (typeof value === 'string' && value !== '' && message.includes(value))) delete record[key];
    }
    return pretty(record);
  };
}

type Method = Exclude<LogLevel, 'silent'>;

/**
 * A logger over one pino root that keeps its bindings itself, so a record holds each key once:
 * a child's binding replaces its parent's of the same name (`component: "message-flow"` under
 * `component: "kernel"`), and a field given at the call replaces a binding. (pino's own children
 * write every binding again, which makes JSON with repeated keys.)
 */
class BoundLogger implements Logger {
  readonly #root: pino.Logger;
  readonly #bindings: LogBindings;

  constructor(root: pino.Logger, bindings: LogBindings) {
    this.#root = root;
    this.#bindings = bindings;
  }

  debug(object: LogBindings, message?: string): void {
    this.#write('debug', object, message);
  }

  info(object: LogBindings, message?: string): void {
    this.#write('info', object, message);
  }

  warn(object: LogBindings, message?: string): void {
    this.#write('warn', object, message);
  }

  error(object: LogBindings, message?: string): void {
    this.#write('error', object, message);
  }

  child(bindings: LogBindings): Logger {
    return new BoundLogger(this.#root, { ...this.#bindings, ...bindings });
  }

  #write(method: Method, object: LogBindings, message: string | undefined): void {
    if (!this.#root.isLevelEnabled(method)) return;
    // An Error given as the object is logged as `err`, as pino would.
    const fields = object instanceof Error ? { err: object } : object;
    const record = { ...this.#bindings, ...fields };
    if (message === undefined) this.#root[method](record);
    else this.#root[method](record, message);
  }
}

/**
 * A logger writing JSON lines (or readable lines, for a terminal), one per record,
 * synchronously (nothing lost on exit), to the console, a file and the ring, each at its level.
 * @example
 * const logger = createLogger({ level: 'info', format: 'pretty', fd: 1, file: join(home.logsDir, 'daemon.log') });
 * logger.child({ component: 'http' }).warn({ code: 'MODEL_CALL_FAILED' }, 'a request failed');
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const format = options.format ?? 'json';
  const settings = { base: null, timestamp: pino.stdTimeFunctions.isoTime };
  const streams: pino.StreamEntry[] = [];
  if (options.ring !== undefined) {
    const ring = options.ring;
    streams.push({ level: 'info', stream: { write: (line: string) => ring.pushLine(line) } });
  }
  if (level !== 'silent') {
    if (format !== 'none') {
      const console: LogSink = options.sink ?? pino.destination({ fd: options.fd ?? 2, sync: true });
      if (format === 'json') streams.push({ level, stream: console });
      else {
        const pretty = prettyLines(options.colorize ?? false);
        streams.push({ level, stream: { write: (line: string) => console.write(pretty(line)) } });
      }
    }
    if (options.file !== undefined) streams.push({ level, stream: pino.destination({ dest: options.file, append: true, mkdir: true, sync: true }) });
  }
  if (streams.length === 0) return createSilentLogger();
  // The root lets through what any stream wants (LOG_LEVELS is most verbose first); each stream keeps its own level.
  const rootLevel = streams
    .map((entry) => entry.level as Method)
    .reduce((lowest, candidate) => (LOG_LEVELS.indexOf(candidate) < LOG_LEVELS.indexOf(lowest) ? candidate : lowest));
  return new BoundLogger(pino({ ...settings, level: rootLevel }, pino.multistream(streams)), {});
}

/** A logger that writes nothing. */
export function createSilentLogger(): Logger {
  return new BoundLogger(pino({ level: 'silent' }), {});
}
