import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/**
 * A turn or a model call refused because the agent used up an hourly quota (`[resources]`
 * `max_tokens_per_hour` or `max_cost_per_hour`), before the turn started or before the call was
 * sent. `details.budget` names the field, `details.limit` and `details.used` the amounts, and
 * `details.retryAt` when enough of the hour's spending ages out for work to go on. Also a model call
 * refused by the agent's lifetime cap (`[capabilities].econ_spend`), which never frees: no `retryAt`.
 */
export class QuotaExceededError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('QUOTA_EXCEEDED', 'user', message, options);
  }
}
