import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/** Default count of identical calls at which the loop guard warns the model. */
export const LOOP_GUARD_WARN_AT = 3;
/** Default count of identical calls at which the loop guard refuses the call. */
export const LOOP_GUARD_BLOCK_AT = 5;
/** Default number of repeated calls, over the whole run, at which the loop guard ends the loop. */
export const LOOP_GUARD_BREAK_AT = 30;
/** Default number of full A-B cycles of two alternating calls at which the loop guard warns. */
export const LOOP_GUARD_PING_PONG_WARN_AT = 3;
/** Default number of full A-B cycles of two alternating calls at which the loop guard refuses. */
export const LOOP_GUARD_PING_PONG_BLOCK_AT = 5;

/** Thresholds for {@link createLoopGuard}; every one is optional. */
export interface LoopGuardOptions {
  /** Warn when the same call (tool and parameters) is seen this many times. Default 3. */
  warnAt?: number;
  /** Refuse the same call from this many times on. Default 5. */
  blockAt?: number;
  /** End the loop once this many calls in total were repeats of an earlier call. Default 30. */
  breakAt?: number;
  /** Warn when two calls have alternated for this many full cycles (A-B-A-B-A-B is 3). Default 3. */
  pingPongWarnAt?: number;
  /** Refuse the call that completes this many alternating cycles. Default 5. */
  pingPongBlockAt?: number;
}

/**
 * What the loop does with a tool call:
 * - `allow`: run it;
 * - `warn`: run it, and append `hint` to the conversation so the model can change course;
 * - `block`: do not run it; give the model `message` as the tool's error result;
 * - `break`: do not run it, and end the agent loop with `message`.
 */
export type LoopGuardVerdict =
  { action: 'allow' } | { action: 'warn'; hint: string } | { action: 'block'; message: string } | { action: 'break'; message: string };

/** A loop guard for one agent run; see {@link createLoopGuard}. */
export interface LoopGuard {
  /**
   * Records a tool call the model asked for and says what to do with it. Every call counts,
   * including ones the guard refuses, because each is another attempt by the model.
   * Once the guard has returned `break` it returns `break` for every later call.
   */
  check(toolName: string, params: unknown): LoopGuardVerdict;
  /** Forgets every call seen so far, as for a new run. */
  reset(): void;
}

/**
 * Creates a loop guard that notices an agent stuck repeating itself.
 *
 * A call's identity is the canonical JSON of its tool name and parameters (object keys
 * sorted recursively), so `{ a, b }` and `{ b, a }` are the same call; a long one is kept as
 * its SHA-256. The n-th identical call warns from `warnAt` and is refused from `blockAt`. Two
 * distinct calls alternating (A-B-A-B-…) warn and are refused likewise, counted in full
 * cycles. Independently, every call that repeats an earlier one counts toward `breakAt`;
 * when that total is reached the loop must end (the circuit breaker).
 *
 * Throws a `RangeError` when a threshold is not a positive integer or when a block
 * threshold is below its warn threshold.
 *
 * @example
 * const guard = createLoopGuard();
 * const verdict = guard.check('web_fetch', { url: 'https://example.com' });
 * if (verdict.action === 'block') return errorResult(verdict.message);
 */
export function createLoopGuard(options: LoopGuardOptions = {}): LoopGuard {
  const warnAt = threshold(options, 'warnAt', LOOP_GUARD_WARN_AT);
  const blockAt = threshold(options, 'blockAt', LOOP_GUARD_BLOCK_AT);
  const breakAt = threshold(options, 'breakAt', LOOP_GUARD_BREAK_AT);
  const pingPongWarnAt = threshold(options, 'pingPongWarnAt', LOOP_GUARD_PING_PONG_WARN_AT);
  const pingPongBlockAt = threshold(options, 'pingPongBlockAt', LOOP_GUARD_PING_PONG_BLOCK_AT);
  if (blockAt < warnAt) {
    throw new RangeError(`cannot create loop guard: blockAt (${blockAt}) must not be below warnAt (${warnAt})`);
  }
  if (pingPongBlockAt < pingPongWarnAt) {
    throw new RangeError(`cannot create loop guard: pingPongBlockAt (${pingPongBlockAt}) must not be below pingPongWarnAt (${pingPongWarnAt})`);
  }

  let counts = new Map<string, number>();
  let repeats = 0;
  let broken: string | undefined;
  let alternation: Alternation = { last: [], length: 0 };

  return {
    check(toolName, params) {
      if (broken !== undefined) return { action: 'break', message: broken };
      const hash = callHash(toolName, params);
      const count = (counts.get(hash) ?? 0) + 1;
      counts.set(hash, count);
      if (count > 1) repeats += 1;
      alternation = extendAlternation(alternation, { hash, toolName });
      const cycles = Math.floor(alternation.length / 2);

      if (repeats >= breakAt) {
        broken =
          `Loop guard ended the agent loop after ${repeats} repeated tool calls; ` +
          `the last was "${toolName}", called ${count} times with the same parameters.`;
        return { action: 'break', message: broken };
      }
      const pair = describePair(alternation);
      if (pair !== undefined && cycles >= pingPongBlockAt) {
        return {
          action: 'block',
          message:
            `Refused tool call "${toolName}": you have alternated between ${pair} for ${cycles} cycles without progress. ` +
            'Stop alternating and try a different approach, or report the blocker.',
        };
      }
      if (count >= blockAt) {
        return {
          action: 'block',
          message:
            `Refused tool call "${toolName}": it was called ${count} times with the same parameters. ` + 'Try a different approach, or report the blocker.',
        };
      }
      if (pair !== undefined && cycles >= pingPongWarnAt) {
        return {
          action: 'warn',
          hint:
            `You have been alternating between ${pair} for ${cycles} cycles. ` + 'You are repeating yourself; stop and reflect, then try a different approach.',
        };
      }
      if (count >= warnAt) {
        return {
          action: 'warn',
          hint:
            `You have called "${toolName}" ${count} times with the same parameters. ` +
            'You are repeating yourself; stop and reflect, then try a different approach.',
        };
      }
      return { action: 'allow' };
    },
    reset() {
      counts = new Map();
      repeats = 0;
      broken = undefined;
      alternation = { last: [], length: 0 };
    },
  };
}

/** From this length on, a call's JSON is kept as its hash (which starts with no `[`, so never equals one kept whole). */
const HASHED_FROM = 128;

function callHash(toolName: string, params: unknown): string {
  const json = canonicalJson([toolName, params]);
  return json.length < HASHED_FROM ? json : createHash('sha256').update(json).digest('hex');
}

type Call = { hash: string; toolName: string };

/** The tail of the call history that alternates between two distinct calls. */
type Alternation = { last: Call[]; length: number };

/**
 * Extends the alternating tail with `call`: it keeps alternating while each call equals the
 * one two back and differs from the one before; otherwise it restarts from the previous
 * call and this one (or from this one alone when it repeats the previous call).
 */
function extendAlternation(tail: Alternation, call: Call): Alternation {
  const previous = tail.last.at(-1);
  const beforePrevious = tail.last.length >= 2 ? tail.last.at(-2) : undefined;
  if (previous === undefined || previous.hash === call.hash) return { last: [call], length: 1 };
  if (beforePrevious !== undefined && beforePrevious.hash === call.hash) {
    return { last: [previous, call], length: tail.length + 1 };
  }
  return { last: [previous, call], length: 2 };
}

/** Names the two alternating calls, e.g. `"search" and "fetch"`. */
function describePair(tail: Alternation): string | undefined {
  const [first, second] = tail.last;
  if (first === undefined || second === undefined) return undefined;
  return first.toolName === second.toolName ? `two different "${first.toolName}" calls` : `"${first.toolName}" and "${second.toolName}"`;
}

function threshold(options: LoopGuardOptions, name: keyof LoopGuardOptions, fallback: number): number {
  const value = options[name] ?? fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`cannot create loop guard: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
