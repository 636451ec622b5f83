import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider';
import { QuotaExceededError, TokenBudgetExceededError } from '../errors/index.ts';
import {
  delegatingModel,
  estimateCallInputTokens,
  estimateOutputTokens,
  estimatePromptTokens,
  type ModelResolver,
  type ModelTarget,
  type TokenUsage,
} from '../models/index.ts';
import type { QuotaLimits, QuotaTracker } from './quota-tracker.ts';
import type { LifetimeSpend } from './lifetime-spend.ts';
import type { UnloggedSpend } from './shared-totals.ts';

/**
 * The one ledger every model call of an agent goes through (docs/decisions/0040-budget-ledger.md):
 * before the call it reserves from each budget that covers it, after the call it settles with
 * what the provider reported, and a budget that is spent refuses the call.
 */

/** What a model call spends, or is expected to: its tokens and their price. */
export interface CallSpend {
  /** Every input token, those read from or written to the provider's prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache (0 when none or not reported). */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache. */
  cacheWriteTokens?: number;
  costUsd: number;
}

/** A budget's claim for one call: settled with what the call spent, or released when it reported nothing. Each is done once; later calls do nothing. */
export interface Reservation {
  settle(spent: CallSpend): void;
  release(): void;
}

/** A budget model calls draw from. */
export interface Budget {
  /** The agent whose hourly quota this is (see {@link BudgetLedger.hourly}): who a metered call is made for. */
  readonly agent?: { id: string; name: string };
  /**
   * Holds `estimate` (at most what is left) for one call.
   * @throws {QuotaExceededError} {TokenBudgetExceededError} when nothing is left: the call must not be made.
   */
  reserve(estimate: CallSpend): Reservation | Promise<Reservation>;
}

/** Whether `error` is a budget's refusal (a quota or a token budget spent): not the model's failure, so no retry or fallback helps. */
export function isBudgetRefusal(error: unknown): error is QuotaExceededError | TokenBudgetExceededError {
  return error instanceof QuotaExceededError || error instanceof TokenBudgetExceededError;
}

const NOTHING: Reservation = { settle: () => undefined, release: () => undefined };

/**
 * A number of tokens (input + output of every call that draws from it) for one piece of work: a
 * package activity's `token_budget.max`, or what is left of its run's `total_per_run`. A call is
 * refused once nothing is left (reservations of calls under way count as spent), so the work ends
 * at most one call's worth past `max`.
 */
export class TokenBudget implements Budget {
  readonly max: number;
  /** Names the budget in a refusal: `activity "scrape" (token_budget.max = 4096)`. */
  readonly label: string;
  inputTokens = 0;
  outputTokens = 0;
  #reserved = 0;

  constructor(max: number, label: string) {
    this.max = max;
    this.label = label;
  }

  /** Tokens settled so far. */
  get used(): number {
    return this.inputTokens + this.outputTokens;
  }

  reserve(estimate: CallSpend): Reservation {
    const left = this.max - this.used - this.#reserved;
    if (left <= 0) {
      throw new TokenBudgetExceededError(
        `stopped before a model call: ${this.label} allows ${this.max} tokens and ${this.used} were used; raise the budget to let the work go further`,
        {
          details: { max: this.max, used: this.used, inputTokens: this.inputTokens, outputTokens: this.outputTokens },
        },
      );
    }
    const held = Math.min(left, estimate.inputTokens + estimate.outputTokens);
    this.#reserved += held;
    let open = true;
    const close = (): boolean => {
      if (!open) return false;
      open = false;
      this.#reserved -= held;
      return true;
    };
    return {
      settle: (spent) => {
        if (!close()) return;
        this.inputTokens += spent.inputTokens;
        this.outputTokens += spent.outputTokens;
      },
      release: () => {
        close();
      },
    };
  }
}

/** A budget that refuses nothing and is told what each call spent (a package run counting its attempts). */
export function spendListener(listener: (spent: CallSpend) => void): Budget {
  return {
    reserve: () => {
      let open = true;
      return {
        settle: (spent) => {
          if (!open) return;
          open = false;
          listener(spent);
        },
        release: () => {
          open = false;
        },
      };
    },
  };
}

/** Who pays for the calls of a metered resolver, and what covers them. */
export interface CallScope {
  /** Every budget the calls draw from, in the order they are asked (the first to refuse names itself). */
  budgets: readonly Budget[];
  /** The price of a call's tokens on `target` (0 when unknown), its cached input at the cache's prices. */
  price: (target: ModelTarget, usage: TokenUsage & { inputTokens: number; outputTokens: number }) => number;
}

/**
 * The kernel's budget ledger: agents' hourly quotas (kept by the {@link QuotaTracker}) and the
 * budgets of a piece of work, drawn from at each model call by the models of a metered resolver.
 */
export class BudgetLedger {
  readonly #quotas: QuotaTracker;
  /** Agents' lifetime spending, held to `[capabilities].econ_spend`. */
  readonly lifetime: LifetimeSpend | undefined;

  constructor(quotas: QuotaTracker, lifetime?: LifetimeSpend) {
    this.#quotas = quotas;
    this.lifetime = lifetime;
  }

  /** An agent's hourly tokens and cost (its `[resources]`), as a budget of the calls of a piece of work (`work`: what they spend that is not written yet). */
  hourly(agentId: string, agentName: string, limits: QuotaLimits, work: UnloggedSpend): Budget {
    return { agent: { id: agentId, name: agentName }, reserve: (estimate) => this.#quotas.reserve(agentId, agentName, limits, estimate, work) };
  }

  /**
   * `resolver` with every model it gives metered: each call (`doGenerate`, `doStream`) reserves
   * from every budget of `scope` first, and is refused with the budget's error when one is spent;
   * it settles with the usage the provider reported, or releases the reservation when it failed
   * without any. Retries and fallbacks call the model again, so each is metered too.
   */
  meter(resolver: ModelResolver, scope: CallScope): ModelResolver {
    return { resolve: (target) => meteredModel(resolver.resolve(target), target, scope) };
  }
}

/**
 * How a metered model call ended: `ok` (it reported usage), `cut-off` (its stream was cut off
 * while it answered; `spent` is an estimate), `error` (it failed without usage), `refused` (a
 * budget refused it: it was never sent).
 */
export type MeteredCallOutcome = 'ok' | 'cut-off' | 'error' | 'refused';

/** A model call as the ledger saw it end, for metrics and traces. */
export interface MeteredCall {
  /** The agent it was made for; undefined when its scope names none. */
  agent: { id: string; name: string } | undefined;
  target: ModelTarget;
  outcome: MeteredCallOutcome;
  /** What it spent; zeros when it reported nothing. */
  spent: CallSpend;
  /** When it started and how long it took, in ms of `performance.now()` (real time, as monitoring wants it). */
  startedAt: number;
  durationMs: number;
  /** What it was asked (the prompt and tools), for a trace that captures content. */
  request: Pick<LanguageModelV4CallOptions, 'prompt' | 'tools' | 'maxOutputTokens' | 'temperature'>;
  /** Why it failed, when it did. */
  error?: unknown;
}

/** Listeners told of every metered model call, whichever kernel's ledger made it. */
const callObservers = new Set<(call: MeteredCall) => void>();

/**
 * Tells `listener` of every model call a budget ledger meters in this process (Prometheus
 * metrics, OpenTelemetry spans), as it ends. Process-wide rather than per ledger: the monitoring
 * edges (the HTTP app, the exporter) do not hold the kernel's ledger. A listener must not throw
 * (if it does, the error is swallowed: monitoring never fails a call). Returns a function that
 * stops it.
 */
export function observeModelCalls(listener: (call: MeteredCall) => void): () => void {
  callObservers.add(listener);
  return () => callObservers.delete(listener);
}

const NO_SPEND: CallSpend = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

function tell(call: MeteredCall): void {
  for (const listener of callObservers) {
    try {
      listener(call);
    } catch {
      // Monitoring never fails a model call.
    }
  }
}

/** Holds `estimate` in every budget, or none of them. */
async function reserveAll(budgets: readonly Budget[], estimate: CallSpend): Promise<Reservation> {
  if (budgets.length === 0) return NOTHING;
  const held: Reservation[] = [];
  try {
    for (const budget of budgets) {
      const reservation = budget.reserve(estimate);
      // Most budgets answer at once: only a budget still loading is waited for.
      held.push(reservation instanceof Promise ? await reservation : reservation);
    }
  } catch (error) {
    for (const reservation of held) reservation.release();
    throw error;
  }
  return joined(held);
}

/** The reservations of one call in several budgets as one: settled or released in each. */
export function joined(held: readonly Reservation[]): Reservation {
  if (held.length === 0) return NOTHING;
  if (held.length === 1) return held[0] as Reservation;
  return {
    settle: (spent) => {
      for (const reservation of held) reservation.settle(spent);
    },
    release: () => {
      for (const reservation of held) reservation.release();
    },
  };
}

/** A rough count of the tokens a prompt sends (moved to the model layer; kept here for the ledger's callers). */
export { estimatePromptTokens };

function spendOf(target: ModelTarget, usage: LanguageModelV4Usage, scope: CallScope): CallSpend {
  const tokens = {
    inputTokens: usage.inputTokens.total ?? 0,
    outputTokens: usage.outputTokens.total ?? 0,
    cacheReadTokens: usage.inputTokens.cacheRead ?? 0,
    cacheWriteTokens: usage.inputTokens.cacheWrite ?? 0,
  };
  return { ...tokens, costUsd: scope.price(target, tokens) };
}

/** `model` metered as {@link BudgetLedger.meter} says. */
function meteredModel(model: LanguageModelV4, target: ModelTarget, scope: CallScope): LanguageModelV4 {
  const agent = scope.budgets.find((budget) => budget.agent !== undefined)?.agent;
  const observed = (options: LanguageModelV4CallOptions) => {
    const startedAt = globalThis.performance.now();
    return (outcome: MeteredCallOutcome, spent: CallSpend = NO_SPEND, error?: unknown): void => {
      if (callObservers.size === 0) return;
      tell({
        agent,
        target,
        outcome,
        spent,
        startedAt,
        durationMs: globalThis.performance.now() - startedAt,
        request: options,
        ...(error === undefined ? {} : { error }),
      });
    };
  };
  const reserve = async (options: LanguageModelV4CallOptions, end: ReturnType<typeof observed>): Promise<Reservation> => {
    const estimate = { inputTokens: estimatePromptTokens(options.prompt), outputTokens: options.maxOutputTokens ?? 0 };
    try {
      return await reserveAll(scope.budgets, { ...estimate, costUsd: scope.price(target, estimate) });
    } catch (error) {
      end('refused', NO_SPEND, error);
      throw error;
    }
  };
  return delegatingModel(model, {
    async doGenerate(options) {
      const end = observed(options);
      const reservation = await reserve(options, end);
      try {
        const result = await model.doGenerate(options);
        const spent = spendOf(target, result.usage, scope);
        reservation.settle(spent);
        end('ok', spent);
        return result;
      } catch (error) {
        end('error', NO_SPEND, error);
        throw error;
      } finally {
        reservation.release();
      }
    },
    async doStream(options) {
      const end = observed(options);
      const reservation = await reserve(options, end);
      let result;
      try {
        result = await model.doStream(options);
      } catch (error) {
        reservation.release();
        end('error', NO_SPEND, error);
        throw error;
      }
      // A stream settles at its `finish` part. One cut off before it (its signal aborted, its
      // reader gone: a cancelled turn) was answering: the provider read the whole prompt and wrote
      // what was streamed, and bills them, so it settles with their estimate. One that ends or
      // fails without a `finish` reported nothing and is released.
      const signal = options.abortSignal;
      let written = 0;
      const cutOff = (): CallSpend => {
        const tokens = { inputTokens: estimateCallInputTokens(options), outputTokens: estimateOutputTokens(written) };
        return { ...tokens, costUsd: scope.price(target, tokens) };
      };
      const onAbort = (): void => close(cutOff(), 'cut-off');
      signal?.addEventListener('abort', onAbort, { once: true });
      let closed = false;
      const close = (spent: CallSpend | undefined, outcome: MeteredCallOutcome): void => {
        signal?.removeEventListener('abort', onAbort);
        if (spent === undefined) reservation.release();
        else reservation.settle(spent);
        if (closed) return;
        closed = true;
        end(outcome, spent);
      };
      // Read through by hand rather than piped through a TransformStream: a pipe costs several
      // promises a part where this costs one (~10 µs a streamed call). The outcomes are the pipe's:
      // a source that errors is cut off, one that ends without a `finish` is released.
      const source = result.stream.getReader();
      // A source that fails while nobody reads (the consumer waits on its own reader) is cut off
      // then, not at the next read: its reservation is given back, and the call told ended, at once.
      source.closed.catch(() => close(cutOff(), 'cut-off'));
      const settled = new ReadableStream<LanguageModelV4StreamPart>(
        {
          async pull(controller) {
            let next: Awaited<ReturnType<typeof source.read>>;
            try {
              next = await source.read();
            } catch (error) {
              close(cutOff(), 'cut-off');
              throw error;
            }
            if (next.done) {
              close(undefined, 'error');
              controller.close();
              return;
            }
            const part = next.value;
            if (part.type === 'finish') close(spendOf(target, part.usage, scope), 'ok');
            else if (part.type === 'text-delta' || part.type === 'reasoning-delta' || part.type === 'tool-input-delta') written += part.delta.length;
            controller.enqueue(part);
          },
          cancel: (reason) => {
            close(cutOff(), 'cut-off');
            // Passed on, not waited for: the consumer's cancel ends at once, as the pipe's did.
            source.cancel(reason).catch(() => undefined);
          },
        },
        { highWaterMark: 0 },
      );
      return { ...result, stream: settled };
    },
  });
}
