import type { JsonObject } from '../contracts/index.ts';

/** Tokens used by a run (all model calls added up). */
export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
}

/** What a finished run returns: the reply, what it cost, and how many model calls it took. */
export interface TurnResult {
  text: string;
  usage: TurnUsage;
  iterations: number;
  costUsd: number;
  /** `provider/model` of the model that gave the final answer. */
  model: string;
}

/** The phases a run reports as it goes. */
export type RunPhase =
  | 'model-call'
  | 'fallback'
  | 'continuation'
  | 'compaction'
  | 'loop-guard'
  | 'max-iterations'
  | 'token-budget'
  // A turn its daemon stopped in goes on from its journal (decision 0045).
  | 'resume'
  // The delegate's steps (spec/03): its catalog, choosing, rewriting, handing over, answering.
  | 'catalog'
  | 'select'
  | 'formulate'
  | 'delegate'
  | 'analyze'
  // The chain of thought's (spec/03): assess, plan, execute, synthesize, replan, finalize.
  | 'assess'
  | 'plan'
  | 'execute'
  | 'synthesize'
  | 'replan'
  | 'finalize';

/**
 * Every run is a stream of these. The CLI, SSE, MCP and A2A adapters all render the same
 * stream. Names are `<noun>-<verb>`; `run-finish` and `error` end a stream.
 */
export type AgentEvent =
  | { type: 'run-start'; runId: string; agentId: string; agentName: string }
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | {
      type: 'tool-result';
      toolCallId: string;
      toolName: string;
      text: string;
      isError: boolean;
      /** How long the call took, approval wait included (set by the kernel). */ durationMs?: number;
    }
  | { type: 'phase'; phase: RunPhase; detail: string; data?: Record<string, unknown> }
  | {
      type: 'approval-request';
      approvalId: string;
      toolCallId: string;
      toolName: string;
      input: unknown;
      expiresAt: string;
      /** Why it waits when taint tracking holds it: the untrusted text it carries, and whence. */ reason?: string;
    }
  | { type: 'run-finish'; result: TurnResult }
  | {
      type: 'error';
      code: string;
      category: 'user' | 'system' | 'third-party';
      message: string;
      /** The error's details (a quota's `retryAt`, …), when it has any. */ details?: JsonObject;
    };

/** Receives a run's events as they happen. Must not throw. */
export type AgentEventSink = (event: AgentEvent) => void;
