import type { TurnResult } from '../runtime/index.ts';
import type { TurnView } from '../wire/index.ts';

export type { TurnView };

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
