import type { TurnResult } from '../runtime/index.ts';

/** A turn's result as `loom send --json` and `POST /api/agents/{agent}/messages` return it. */
export interface TurnView {
  text: string;
  usage: { input_tokens: number; output_tokens: number };
  iterations: number;
  cost_usd: number;
  model: string;
}

/** Builds the JSON view of a turn result. */
export function toTurnView(result: TurnResult): TurnView {
  return {
    text: result.text,
    usage: { input_tokens: result.usage.inputTokens, output_tokens: result.usage.outputTokens },
    iterations: result.iterations,
    cost_usd: result.costUsd,
    model: result.model,
  };
}
