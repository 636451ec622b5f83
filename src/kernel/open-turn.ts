import type { ModelMessage } from 'ai';
import type { Logger } from '../contracts/index.ts';
import type { AgentEventSink } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { ModelTarget } from '../models/index.ts';
import type { AgentRuntime, Caller } from './agent-runtime.ts';
import type { SessionHistory } from './session-histories.ts';
import type { UnloggedSpend } from './shared-totals.ts';
import type { TurnSeal } from './message-flow-contract.ts';
import type { JournalPlace } from './turn-journal.ts';
import type { TurnTrace } from './turn-record.ts';

/**
 * A turn on an agent's session while it runs: where its messages go and what its commit needs,
 * shared by the message flow and the turns of agent types with their own steps (`module-turns.ts`).
 */

/** Where a turn's messages go: its session, and the conversation and person it belongs to. */
export interface TurnPlace {
  sessionId: string;
  conversation?: string;
  person?: string;
  /** When the message was accepted (its time in the session). */
  receivedAt: number;
  /** Whether someone reads the turn's events as they come: model output is then streamed. */
  stream: boolean;
  /** How the turn's commit writes its audit record (see `TurnSeal`). */
  seal?: TurnSeal;
  /** `SendOptions.door`: the door whose messages are untrusted whoever sends them. */
  door?: 'a2a';
  /** A scheduled wake-up of an agent that acts unasked (see `SendOptions.cycle`). */
  cycle?: boolean;
  /** The model the turn runs on instead of the manifest's (a scheduled wake-up's `[schedule].model`). */
  model?: ModelTarget;
  /** The turn's journal (decision 0045): a turn of the assistant loop, or one of another type whose caller was told it is taken (`SendOptions.acknowledged`). */
  journal?: JournalPlace;
}

/** A turn under way on a session, as its commit needs it (see `commitTurn` in `message-flow.ts`). */
export interface OpenTurn {
  runtime: AgentRuntime;
  entry: AgentEntry;
  place: TurnPlace;
  /** The session as the turn read it. */
  base: SessionHistory;
  userMessage: ModelMessage;
  trace: TurnTrace;
  logger: Logger;
  /** What the turn's calls spent through this node that is not in the usage log yet: its commit ends it. */
  spend: UnloggedSpend;
}

/**
 * A turn as the parts of the message flow run it, in place of the positional parameters each
 * took: the runtime and agent it runs on, who asked, how it is stopped, where its events go.
 */
export interface TurnContext {
  runtime: AgentRuntime;
  entry: AgentEntry;
  caller: Caller;
  /** Aborts the turn (a cancel, a kill or suspend, the caller's own signal). */
  signal: AbortSignal;
  /** Where the turn's events go (a door's stream, the live turn's followers). */
  emit: AgentEventSink;
}

/** A turn on an agent's session: a message, and where it goes (see {@link TurnPlace}). */
export interface SessionTurnContext extends TurnContext {
  message: string;
  place: TurnPlace;
}

/** Told nothing: the events of a turn no one follows. */
export const noEvents: AgentEventSink = () => undefined;
