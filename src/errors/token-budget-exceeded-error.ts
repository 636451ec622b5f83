import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A run that passed its token budget (a package activity's `token_budget.max` or its binding's `total_per_run`). */
export class TokenBudgetExceededError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('TOKEN_BUDGET_EXCEEDED', 'user', message, options);
  }
}
