import type { ModelMessage } from 'ai';
import type { z } from 'zod';
import type { Clock, JsonObject, Logger } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { AgentEventSink } from '../runtime/index.ts';

/** An agent another may reach, as a catalog lists it. */
export interface CatalogEntry {
  name: string;
  description: string;
}

/**
 * What the kernel gives an orchestrating agent type for one turn. Every model call it makes is
 * the agent's own (its models, its quota, its usage); every message to another agent is the
 * agent's own `agent_message` tool call, so every gate of the tool runner, the depth limit and
 * the cycle checks apply.
 */
export interface ModuleTurnContext {
  readonly agent: { id: string; name: string; manifest: Manifest };
  /** The user's message. */
  readonly message: string;
  /** Who sent it: a person through a door (with the role and the key's name), or another agent. */
  readonly caller: { kind: 'user'; role: string; name?: string } | { kind: 'agent'; id: string; name: string };
  /** The session before this turn. */
  readonly history: readonly ModelMessage[];
  /** The agent's system prompt. */
  readonly system: string;
  readonly signal: AbortSignal;
  readonly emit: AgentEventSink;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * A structured step: the model answers with JSON matching `schema`. A reply that does not
   * parse or validate is asked for once more, with the error; a second failure throws, naming
   * the step.
   */
  structured<T>(step: string, schema: z.ZodType<T>, request: { system: string; messages: ModelMessage[] }): Promise<T>;
  /** A plain model call; returns its text. */
  generate(step: string, request: { system: string; messages: ModelMessage[] }): Promise<string>;
  /** The agent loop with the agent's tools (through the tool runner, every check applied); returns its final text. */
  act(step: string, request: { system: string; messages: ModelMessage[] }): Promise<string>;
  /**
   * One tool call as the agent, through the tool runner like a model's call (capability gate,
   * exec policy, approvals, timeout, output cap, audit); a refusal is an error result.
   */
  callTool(name: string, input: Record<string, unknown>): Promise<{ text: string; isError: boolean }>;
  /** Reports what the agent type did (a chain of thought's trace, a workflow task's outcome): audit log and event stream. */
  report(event: AgentTypeReport): Promise<void>;
  /**
   * The agents this one may hand work to: `names` (every live agent but itself when empty),
   * those that exist, run, its `agent_message` grants cover and pass a health check (one of
   * their models can run: a model, its key, a server that answers; their last turn did not fail
   * on every model in the last five minutes); the others with why they are out.
   */
  catalog(names: readonly string[]): Promise<{ available: CatalogEntry[]; leftOut: { name: string; reason: string }[] }>;
  /**
   * Sends `message` to `agent` as this agent's `agent_message` tool call, through the tool runner
   * like a model's call (its `tool_invoke` grant, tool lists, exec policy, a person's approval
   * when `[autonomous].approval_required_for` lists it, audit), and returns the reply's text (capped
   * like any tool result). After `timeoutMs` of the call (on the kernel's clock; a wait for
   * approval not counted) the delegated turn is cancelled and this throws `DELEGATION_TIMEOUT`; a
   * call the runner or the kernel's checks refuse throws `DELEGATION_REFUSED` (nothing was sent), a
   * delegated turn that fails `DELEGATION_FAILED` with its message (the kernel's error as the cause).
   */
  delegate(agent: string, message: string, timeoutMs: number): Promise<string>;
}

/** What an agent type reports (the kernel adds the time and the agent). */
export type AgentTypeReport =
  | { type: 'chain-of-thought-finish'; message: string; trace: JsonObject[] }
  | { type: 'workflow-state-change'; state: string; note: string | null }
  | { type: 'workflow-task-finish'; task: string; status: string; attempts: number; action: string | null; reason: string | null }
  | { type: 'code-module-fail'; fault: string; message: string };

/** What a turn adds to the session after the user's message, and the reply. */
export interface ModuleTurnOutcome {
  text: string;
  messages: ModelMessage[];
}

/** An agent type: one turn, given what the kernel provides. */
export type AgentModule = (context: ModuleTurnContext) => Promise<ModuleTurnOutcome>;
