/** A log record as the event-log tools see it. */
export interface LogEntry {
  /** When (epoch ms). */
  at: number;
  level: 'info' | 'warn' | 'error' | 'fatal';
  /** Where it comes from: `loom.<subsystem>` (e.g. `loom.scheduler`, `loom.http`). */
  category: string;
  message: string;
  /** The agent the record is about, when it names one. */
  agentId?: string | undefined;
}

/** The read side of the ring, as the event-log tools use it. */
export interface LogReader {
  /** Every entry, newest first. */
  entries(): LogEntry[];
  readonly size: number;
  readonly capacity: number;
}
