import { type StreamResponse, type Task, type TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { type AgentExecutionEvent, InMemoryTaskStore, ResultManager, ServerCallContext, V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import type { A2aPushConfigRecord, A2aPushConfigRepository, Clock, EventRecord, JsonObject, Logger } from '../contracts/index.ts';
import { StoreClosedError } from '../errors/index.ts';
import { requestPinned, type HostResolver } from '../tools/index.ts';
import { isTerminalState } from './bounded-task-store.ts';
import { PushWebhookRefusedError } from './push-webhook-refused-error.ts';
import { vetWebhookUrl } from './webhook-guard.ts';

/** Attempts per notification (the first and three retries). */
export const DEFAULT_PUSH_ATTEMPTS = 4;
/** The first retry's delay; each next one doubles it (1 s, 2 s, 4 s). */
export const DEFAULT_PUSH_BACKOFF_MS = 1000;
/** The longest wait before a retry, whatever a webhook's `Retry-After` asks. */
export const MAX_PUSH_RETRY_DELAY_MS = 60_000;
/** How long one POST to a webhook may take, in milliseconds. */
export const DEFAULT_PUSH_TIMEOUT_MS = 10_000;
/** How long the daemon's stop waits for the deliveries under way (see {@link PushNotifier.drain}): one POST's time. */
export const PUSH_DRAIN_MS = DEFAULT_PUSH_TIMEOUT_MS;

/** The token header every notification carries when the config gave a token (a2a-js and a2a-python read it). */
export const PUSH_TOKEN_HEADER = 'X-A2A-Notification-Token';
/** The same token under the name a2a-go reads. */
const PUSH_TOKEN_HEADER_UNPREFIXED = 'A2A-Notification-Token';

/** What {@link PushNotifier} is built from. */
export interface PushNotifierOptions {
  repository: A2aPushConfigRepository;
  /** Retries wait on it. */
  clock: Clock;
  logger: Logger;
  /** `[a2a].push_allow_private_network`. */
  allowPrivateNetwork: boolean;
  /** Records each delivery (delivered, or failed for good) in the audit log. */
  record?: ((event: Omit<EventRecord, 'seq'>) => Promise<unknown>) | undefined;
  /** The id of an agent, by name, for the audit record (null when it is gone). */
  agentIdOf?: ((name: string) => string | null) | undefined;
  resolve?: HostResolver | undefined;
  attempts?: number | undefined;
  backoffMs?: number | undefined;
  timeoutMs?: number | undefined;
}

/** How one POST went. */
type Attempt = { ok: true; status: number } | { ok: false; status: number | null; reason: string; retryable: boolean; retryAfterMs?: number | undefined };

/** A running task's snapshot (to send whole tasks to 0.3 webhooks) and the state last notified. */
interface Tracked {
  results: ResultManager;
  lastState: TaskState | undefined;
  chain: Promise<void>;
}

/**
 * Delivers A2A push notifications: each significant update of a task (the task when it starts,
 * every change of its state, its finished artifact) is POSTed to every webhook configured for the
 * task, in order, shaped for the revision the config was set over (1.0: a `StreamResponse`,
 * `application/a2a+json`; 0.3: the whole task), with the config's token
 * (`X-A2A-Notification-Token`) and authentication (`Authorization`). The webhook's address passes
 * the same guard as `web_fetch`'s at every delivery, and the connection is pinned to the checked
 * addresses. A failed POST (no answer, 408, 429, 5xx) is retried with exponential backoff on the
 * injected clock, honouring `Retry-After`; each delivery is recorded in the audit log
 * (`a2a-push-deliver`, `a2a-push-fail`), without its token.
 *
 * Streamed text chunks are not sent one by one: the finished artifact carries the whole text.
 */
export class PushNotifier {
  readonly #options: PushNotifierOptions;
  readonly #tracked = new Map<string, Tracked>();
  readonly #closing = new AbortController();
  /** Aborted when the drain starts (and at close): no delivery waits to retry from then on. */
  readonly #retries = new AbortController();
  readonly #pending = new Set<Promise<void>>();
  readonly #context = new ServerCallContext();
  readonly #serializers = { '1.0': new V1PushNotificationSerializer(), '0.3': new V03PushNotificationSerializer() };

  constructor(options: PushNotifierOptions) {
    this.#options = options;
  }

  /** Takes one event of `agent`'s executor (in the order it published them). */
  observe(agent: string, event: AgentExecutionEvent): void {
    if (this.#closing.signal.aborted) return;
    const taskId = event.kind === 'task' ? event.data.id : event.kind === 'message' ? event.data.taskId : event.data.taskId;
    if (taskId === '') return;
    let tracked = this.#tracked.get(taskId);
    if (tracked === undefined) {
      tracked = { results: new ResultManager(new InMemoryTaskStore(), this.#context), lastState: undefined, chain: Promise.resolve() };
      this.#tracked.set(taskId, tracked);
    }
    const current = tracked;
    const step = current.chain
      .then(() => this.#handle({ agent, taskId, tracked: current }, event))
      .catch((error: unknown) => {
        // Once stopped, the store may be closed too: the next start tells the task's end.
        if (this.#closing.signal.aborted && error instanceof StoreClosedError) return;
        this.#options.logger.warn({ err: error, taskId, agent }, 'A2A push notification not sent');
      });
    current.chain = step;
    this.#track(step);
  }

  /** Notifies a task's webhooks of the task as stored (one failed at start-up, say): the whole task, its state included. */
  notifyStored(agent: string, task: Task): void {
    this.observe(agent, { kind: 'task', data: task });
  }

  /** Forgets the task (its client canceled it, no executor running it): the next notification of it starts afresh. */
  forget(taskId: string): void {
    this.#tracked.delete(taskId);
  }

  /**
   * The daemon's stop, before the store closes: the deliveries taken so far, and those taken while
   * it waits (a task that ends meanwhile), go on for `ms` at most on the clock, each with the POSTs
   * it has in flight and none retried (a retry waiting is not waited for: the delivery fails,
   * recorded so), then it stops (see {@link close}). A task's webhook is told of the task's end
   * before the daemon stops; a delivery cut short is not retried (a task still running is given its
   * end at the next start, and its webhooks told then).
   */
  async drain(ms = PUSH_DRAIN_MS): Promise<void> {
    this.#retries.abort();
    const waited = new AbortController();
    let timedOut = false;
    const timeUp = this.#options.clock
      .sleep(ms, { signal: waited.signal })
      .then(() => (timedOut = true))
      .catch(() => undefined);
    while (this.#pending.size > 0 && !timedOut) await Promise.race([Promise.allSettled([...this.#pending]), timeUp]);
    waited.abort();
    this.close();
  }

  /** Stops: retries waiting are dropped, requests in flight aborted. */
  close(): void {
    this.#retries.abort();
    this.#closing.abort(new Error('the A2A server is closing'));
    this.#tracked.clear();
  }

  #track(promise: Promise<void>): void {
    this.#pending.add(promise);
    void promise.finally(() => this.#pending.delete(promise));
  }

  /** Folds `event` into the task `tracked` follows, and pushes what a client should hear of it. */
  async #handle(followed: { agent: string; taskId: string; tracked: Tracked }, event: AgentExecutionEvent): Promise<void> {
    const { agent, taskId, tracked } = followed;
    await tracked.results.processEvent(event);
    const task = tracked.results.getCurrentTask();
    let response: StreamResponse | undefined;
    let state: TaskState | undefined;
    if (event.kind === 'task' && task !== undefined) {
      response = { payload: { $case: 'task', value: structuredClone(task) } };
      state = task.status?.state;
    } else if (event.kind === 'statusUpdate') {
      state = event.data.status?.state;
      if (state !== tracked.lastState) response = { payload: { $case: 'statusUpdate', value: event.data } };
    } else if (event.kind === 'artifactUpdate' && event.data.lastChunk) {
      response = { payload: { $case: 'artifactUpdate', value: event.data } };
    }
    if (state !== undefined) tracked.lastState = state;
    if (isTerminalState(state) && this.#tracked.get(taskId) === tracked) this.#tracked.delete(taskId);
    if (response === undefined) return;
    const configs = await this.#options.repository.list(taskId);
    await Promise.all(configs.map((config) => this.#deliver(config, { agent, response, task: task === undefined ? undefined : structuredClone(task) })));
  }

  /** Delivers `update` of `agent`'s task to the webhook `config` names, retrying as configured, and records the outcome. */
  async #deliver(config: A2aPushConfigRecord, update: { agent: string; response: StreamResponse; task: Task | undefined }): Promise<void> {
    const { agent, response, task } = update;
    const serializer = config.wireVersion === '0.3' ? this.#serializers['0.3'] : this.#serializers['1.0'];
    const { body, contentType } = serializer.serialize(response, task);
    const attempts = Math.max(1, this.#options.attempts ?? DEFAULT_PUSH_ATTEMPTS);
    const backoff = this.#options.backoffMs ?? DEFAULT_PUSH_BACKOFF_MS;
    let outcome: Attempt = { ok: false, status: null, reason: 'not sent', retryable: false };
    let made = 0;
    while (made < attempts) {
      made += 1;
      outcome = await this.#attempt(config, body, contentType);
      if (outcome.ok || !outcome.retryable || made === attempts || this.#retries.signal.aborted) break;
      const delay = Math.min(MAX_PUSH_RETRY_DELAY_MS, Math.max(backoff * 2 ** (made - 1), outcome.retryAfterMs ?? 0));
      try {
        await this.#options.clock.sleep(delay, { signal: this.#retries.signal });
      } catch {
        if (this.#closing.signal.aborted) return;
        break; // draining: failed, as it is
      }
    }
    const payload = response.payload;
    const state = payload?.$case === 'statusUpdate' ? payload.value.status?.state : payload?.$case === 'task' ? payload.value.status?.state : undefined;
    const target = new URL(config.url);
    const data: JsonObject = {
      name: agent,
      taskId: config.taskId,
      configId: config.id,
      // Origin and path only: a query may hold a secret.
      url: `${target.origin}${target.pathname}`,
      update: payload?.$case ?? 'unknown',
      ...(state === undefined ? {} : { state: taskStateToJSON(state) }),
      attempts: made,
      status: outcome.status,
      ...(outcome.ok ? {} : { reason: outcome.reason }),
    };
    if (this.#closing.signal.aborted) return;
    if (!outcome.ok) this.#options.logger.warn({ ...data, agent }, 'A2A push notification failed');
    try {
      await this.#options.record?.({
        type: outcome.ok ? 'a2a-push-deliver' : 'a2a-push-fail',
        at: this.#options.clock.now(),
        agentId: this.#options.agentIdOf?.(agent) ?? null,
        data,
      });
    } catch (error) {
      this.#options.logger.error({ err: error, taskId: config.taskId }, 'could not record an A2A push notification in the audit log');
    }
  }

  async #attempt(config: A2aPushConfigRecord, body: string, contentType: string): Promise<Attempt> {
    const signal = AbortSignal.any([this.#closing.signal, AbortSignal.timeout(this.#options.timeoutMs ?? DEFAULT_PUSH_TIMEOUT_MS)]);
    let vetted;
    try {
      vetted = await vetWebhookUrl(config.url, { allowPrivateNetwork: this.#options.allowPrivateNetwork, resolve: this.#options.resolve, signal });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return { ok: false, status: null, reason, retryable: !(error instanceof PushWebhookRefusedError) };
    }
    const headers: Record<string, string> = { 'content-type': contentType, 'user-agent': 'Loom A2A push' };
    if (config.token !== null) {
      headers[PUSH_TOKEN_HEADER] = config.token;
      headers[PUSH_TOKEN_HEADER_UNPREFIXED] = config.token;
    }
    if (config.authentication !== null) headers['authorization'] = `${config.authentication.scheme} ${config.authentication.credentials}`;
    try {
      const response = await requestPinned(vetted.url, { method: 'POST', headers, body, addresses: vetted.addresses, signal });
      response.resume();
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) return { ok: true, status };
      const retryable = status === 408 || status === 429 || status >= 500;
      const retryAfter = Number(response.headers['retry-after']);
      return {
        ok: false,
        status,
        reason: `the webhook answered ${status}`,
        retryable,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason =
        signal.aborted && !this.#closing.signal.aborted
          ? `no answer within ${this.#options.timeoutMs ?? DEFAULT_PUSH_TIMEOUT_MS} ms`
          : `cannot reach the webhook: ${code ?? (error instanceof Error ? error.message : String(error))}`;
      return { ok: false, status: null, reason, retryable: true };
    }
  }
}
