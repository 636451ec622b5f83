import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/**
 * Work that passed, or had spent, its token budget (a package activity's `token_budget.max` or its
 * binding's `total_per_run`): stopped after the model call that passed it, or refused before a
 * call (or an attempt) when nothing was left. `details.inputTokens` and `details.outputTokens` say
 * what the stopped attempt spent.
 */
export class TokenBudgetExceededError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('TOKEN_BUDGET_EXCEEDED', 'user', message, options);
  }
}
