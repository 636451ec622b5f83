import type { LogEntry, LogReader } from '../contracts/index.ts';

/** Entries the ring keeps by default (spec/03: the last 1,000). */
export const LOG_RING_CAPACITY = 1000;

const LEVELS: Readonly<Record<number, LogEntry['level']>> = { 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Fields a record's message needs no word of: where it is from, when, ids, and the error (its own record in the log file). */
const UNTOLD = new Set(['level', 'time', 'msg', 'subsystem', 'component', 'agentId', 'err', 'pid', 'hostname', 'event', 'runId', 'toolCallId']);

/** The most characters of fields added to a message. */
const MAX_FIELDS_CHARS = 300;

/**
 * The message with the record's plain fields the message does not say already (`server=github`),
 * so a reader of the ring, which keeps only the words, still learns which server or channel.
 */
function withFields(message: string, record: Record<string, unknown>): string {
  const told = Object.entries(record).flatMap(([key, value]) => {
    if (UNTOLD.has(key) || !(typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) return [];
    const text = String(value);
    return text === '' || message.includes(text) ? [] : [`${key}=${text}`];
  });
  if (told.length === 0) return message;
  const fields = told.join(', ');
  return `${message} (${fields.length > MAX_FIELDS_CHARS ? `${fields.slice(0, MAX_FIELDS_CHARS)}…` : fields})`;
}

/**
 * The daemon's own log records at info and above, the last `capacity` of them, for event-log
 * agents (spec/03). Writes are O(1): a fixed array and a moving head. Records about an agent that
 * `exclude` names (an event-log agent's own turns) are left out, so it cannot feed on itself.
 */
export class LogRing implements LogReader {
  readonly capacity: number;
  readonly #slots: (LogEntry | undefined)[];
  #head = 0;
  #size = 0;
  #exclude: (agentId: string) => boolean = () => false;
  #listener: ((entry: LogEntry) => void) | undefined;

  constructor(capacity = LOG_RING_CAPACITY) {
    this.capacity = capacity;
    this.#slots = new Array<LogEntry | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Sets which agents' records are left out (the host names its event-log agents). */
  excludeAgents(exclude: (agentId: string) => boolean): void {
    this.#exclude = exclude;
  }

  /** Sets what is told of each record the ring keeps, as it keeps it (see `persistLogRing`); it must not throw. */
  onPush(listener: (entry: LogEntry) => void): void {
    this.#listener = listener;
  }

  push(entry: LogEntry): void {
    if (entry.agentId !== undefined && this.#exclude(entry.agentId)) return;
    this.#slots[this.#head] = entry;
    this.#head = (this.#head + 1) % this.capacity;
    if (this.#size < this.capacity) this.#size += 1;
    this.#listener?.(entry);
  }

  /** Takes one pino JSON line; lines below info, or not JSON, are ignored. */
  pushLine(line: string): void {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const level = typeof record['level'] === 'number' ? LEVELS[record['level']] : undefined;
    if (level === undefined) return;
    const time = typeof record['time'] === 'string' ? Date.parse(record['time']) : typeof record['time'] === 'number' ? record['time'] : Number.NaN;
    const source = [record['subsystem'], record['component']].find((value): value is string => typeof value === 'string');
    const agentId = typeof record['agentId'] === 'string' ? record['agentId'] : undefined;
    const message = typeof record['msg'] === 'string' ? record['msg'] : '';
    this.push({
      at: Number.isNaN(time) ? Date.now() : time,
      level,
      category: source === undefined ? 'loom' : `loom.${source}`,
      message: withFields(message, record),
      agentId,
    });
  }

  entries(): LogEntry[] {
    const result: LogEntry[] = [];
    for (let index = 1; index <= this.#size; index += 1) {
      const entry = this.#slots[(this.#head - index + this.capacity) % this.capacity];
      if (entry !== undefined) result.push(entry);
    }
    return result;
  }
}
