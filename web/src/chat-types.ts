/** The chat's shapes (sessions, running turns, traces), written once in src/wire with the rest of the API's. */
export type { CancelledTurnView, ChatSessionView, RunningTurnView, SessionSummary, TraceStep, TurnRecord, TurnStatus } from '../../src/wire/index.ts';
