/** The chat's shapes (sessions, turns' records, traces), written once in src/wire with the rest of the API's. */
export type { SessionSummary, TraceStep, TurnRecord } from '../../src/wire/index.ts';
