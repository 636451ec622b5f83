import type { ApprovalRecord, Clock, JsonObject, Store } from '../contracts/index.ts';
import { compileJsonSchema, type SchemaCheck } from '../validation/index.ts';
import { type ApprovalDecision, EXPIRED_BY_CANCEL, EXPIRED_BY_TIMEOUT, EXPIRED_BY_WITHDRAW, storedDecision } from './approval-requests.ts';

/** A turn's wait for a person's decision on an approval request, for `ApprovalService`. */

/** A turn of this process waiting for a request. */
export interface Waiter {
  /** Hands the turn its decision (once; later calls do nothing). */
  finish(decision: ApprovalDecision): void;
  /** The turn's signal: once it aborts, nothing the request decides will run. */
  signal: AbortSignal;
  /** Set while a cancelled turn's request is being closed, so a decision arriving meanwhile waits for it. */
  closing?: Promise<void>;
  /** Who closed it and why, when `close` did. */
  closedAs?: { by: string; reason: string };
  /** A question's check of its answer: approving needs an answer it accepts. */
  checkAnswer?: SchemaCheck;
  /** Closes the request as `expired` by `by`, then hands the turn a decline saying so (once; nothing when it is closing or finished). */
  close(by: string, reason: string): Promise<void>;
}

/** What a request needs to be closed and announced. */
export type RequestSummary = Pick<ApprovalRecord, 'id' | 'agentId' | 'agentName' | 'tool'>;

/** What a turn's wait needs of the service that holds it. */
export interface WaitPlace {
  /** The turns of this process waiting, by request id. */
  waiters: Map<string, Waiter>;
  clock: Clock;
  /** How long a request waits for a decision (for the timeout's reason). */
  timeoutMs: number;
  store: Store;
  /** Closes the request as `expired` by `by`; whether this call closed it (false: it was decided meanwhile). */
  close(summary: RequestSummary, by: string, reason: string): Promise<boolean>;
}

/**
 * A turn's wait for request `summary`, registered at once (so a decision finds it): its
 * decision, and `arm`, which starts listening for the turn's cancel, the asker's withdrawal and
 * the timeout of `timeoutMs`.
 */
export function waitForDecision(
  place: WaitPlace,
  summary: RequestSummary,
  signal: AbortSignal,
  options: { answerSchema?: JsonObject; withdrawn?: AbortSignal },
): { waiter: Waiter; decision: Promise<ApprovalDecision>; arm: (timeoutMs: number) => void } {
  const { id } = summary;
  let resolve!: (decision: ApprovalDecision) => void;
  let reject!: (error: unknown) => void;
  const decision = new Promise<ApprovalDecision>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  // Aborted once the request is settled: ends the timeout's sleep and removes the abort listeners.
  const done = new AbortController();
  const waiter: Waiter = {
    signal,
    ...(options.answerSchema === undefined ? {} : { checkAnswer: compileJsonSchema(options.answerSchema, { dialect: '2020-12', root: '(answer)' }) }),
    finish: (answer) => {
      if (place.waiters.get(id) !== waiter || waiter.closing !== undefined) return;
      place.waiters.delete(id);
      done.abort();
      resolve(answer);
    },
    close: (by, reason) => {
      if (place.waiters.get(id) !== waiter || waiter.closing !== undefined) return waiter.closing ?? Promise.resolve();
      done.abort();
      waiter.closedAs = { by, reason };
      waiter.closing = place
        .close(summary, by, reason)
        // A store that cannot take the write (closing) leaves the request pending; the next boot closes it.
        .catch(() => false)
        .then(() => {
          place.waiters.delete(id);
          resolve({ approved: false, by, reason });
        });
      return waiter.closing;
    },
  };
  place.waiters.set(id, waiter);

  const arm = (timeoutMs: number): void => {
    const cancel = (): void => {
      if (place.waiters.get(id) !== waiter || waiter.closing !== undefined) return;
      done.abort();
      const why = signal.reason instanceof Error ? signal.reason.message : 'the turn was cancelled';
      waiter.closing = place
        .close(summary, EXPIRED_BY_CANCEL, `the turn ended while this call waited for approval (${why}); nothing was run — ask the agent again`)
        // A store that cannot take the write (closing) leaves the request pending; the next boot closes it.
        .catch(() => false)
        .then(() => {
          place.waiters.delete(id);
          reject(signal.reason);
        });
    };
    const { withdrawn } = options;
    const withdraw = (): void => {
      // A turn cancelled aborts the call's signals too: that is the turn's cancellation, not a withdrawal.
      if (signal.aborted) {
        cancel();
        return;
      }
      const why =
        withdrawn?.reason instanceof Error ? withdrawn.reason.message : typeof withdrawn?.reason === 'string' ? withdrawn.reason : 'its asker cancelled it';
      void waiter.close(EXPIRED_BY_WITHDRAW, `the question was withdrawn before anyone answered (${why}); nothing was answered`);
    };
    if (signal.aborted) cancel();
    else if (withdrawn?.aborted === true) withdraw();
    else {
      signal.addEventListener('abort', cancel, { once: true, signal: done.signal });
      withdrawn?.addEventListener('abort', withdraw, { once: true, signal: done.signal });
    }

    const watched = withdrawn === undefined ? [signal, done.signal] : [signal, withdrawn, done.signal];
    place.clock.sleep(timeoutMs, { signal: AbortSignal.any(watched) }).then(
      async () => {
        const reason = `no decision within ${Math.round(place.timeoutMs / 1000)} s`;
        const timedOut: ApprovalDecision = { approved: false, by: EXPIRED_BY_TIMEOUT, reason };
        try {
          if (await place.close(summary, EXPIRED_BY_TIMEOUT, reason)) {
            waiter.finish(timedOut);
            return;
          }
          // Decided in the store by someone this process did not hear (another Loom process on the
          // same home): the turn still waits, so it takes that answer instead of waiting forever.
          const record = await place.store.approvals.get(id);
          if (record === undefined || record.status === 'pending') waiter.finish(timedOut);
          else waiter.finish(storedDecision(record, EXPIRED_BY_TIMEOUT));
        } catch {
          // The store failed: the call is still not run, and the turn must not wait forever.
          waiter.finish(timedOut);
        }
      },
      () => undefined,
    );
  };
  return { waiter, decision, arm };
}
