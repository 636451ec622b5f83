import type { AgentCard, CancelTaskRequest, SendMessageRequest, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, type PushNotificationSender, type PushNotificationStore, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { A2A_INPUT_MODES } from './agent-cards.ts';
import { callerOfContext, canceledBy, chargeTurnOfContext, inputTextOf, type LoomAgentExecutor, unsupportedPartOf } from './agent-executor.ts';
import { isTerminalState } from './bounded-task-store.ts';

/**
 * The SDK dispatches push notifications only while its own event queue is read, which ends at
 * `input-required` and when a streaming client goes away; Loom's executor dispatches them instead
 * (it sees every event of a turn to its end), so the SDK is given this sender, which does nothing.
 */
const EXECUTOR_DISPATCHES: PushNotificationSender = { send: () => Promise.resolve() };

/** What {@link CheckedRequestHandler} is built from. */
export interface CheckedRequestHandlerOptions {
  card: AgentCard;
  store: TaskStore;
  executor: LoomAgentExecutor;
  /** Largest message text accepted, in UTF-8 bytes. */
  maxBytes: number;
  /** Where push-notification configs are kept (needed when the card advertises push notifications). */
  pushConfigs?: PushNotificationStore | undefined;
  /**
   * Follows a task that runs where this process cannot hear it (on another node sharing the
   * store): each new state of it, until it ends or the client leaves.
   */
  follow?: ((task: Task, context: ServerCallContext) => AsyncIterable<Task>) | undefined;
}

/**
 * The SDK's request handler, refusing before a task starts a message Loom's agents cannot take:
 * a part that is neither text nor data (ContentTypeNotSupportedError, -32005), no text at all,
 * or too much of it (RequestMalformedError, -32602). Every message it takes starts a turn, on
 * every binding (JSON-RPC, HTTP+JSON, 0.3, the legacy shim): the caller is charged for it here,
 * before the turn starts (see `LoomA2aUser.chargeTurn`).
 */
export class CheckedRequestHandler extends DefaultRequestHandler {
  readonly #maxBytes: number;
  readonly #follow: CheckedRequestHandlerOptions['follow'];
  readonly #store: TaskStore;
  readonly #executor: LoomAgentExecutor;

  constructor(options: CheckedRequestHandlerOptions) {
    super(options.card, options.store, options.executor, undefined, options.pushConfigs, EXECUTOR_DISPATCHES);
    this.#maxBytes = options.maxBytes;
    this.#follow = options.follow;
    this.#store = options.store;
    this.#executor = options.executor;
  }

  #check(params: SendMessageRequest): void {
    const unsupported = unsupportedPartOf(params.message);
    if (unsupported !== undefined) {
      throw new ContentTypeNotSupportedError(`the message holds ${unsupported}: Loom agents take ${A2A_INPUT_MODES.join(' and ')} (text and data parts) only`);
    }
    const text = inputTextOf(params.message);
    if (text.trim() === '') throw new RequestMalformedError('the message has no text: Loom agents take text and data parts');
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#maxBytes) throw new RequestMalformedError(`the message is ${bytes} bytes; the limit is ${this.#maxBytes}`);
  }

  override sendMessage(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessage']> {
    this.#check(params);
    chargeTurnOfContext(context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessageStream']> {
    this.#check(params);
    chargeTurnOfContext(context);
    yield* super.sendMessageStream(params, context);
  }

  /**
   * The SDK cancels a task's turn only through an event bus of the canceller's own (it keeps them per
   * caller): an owner's cancel of another key's task was saved while its turn went on. The turn of a
   * task the canceller sees, running here, is cancelled first, naming who cancels it (as the API's
   * cancel of a turn does, whoever started it), then the SDK cancels the task.
   */
  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const caller = callerOfContext(context);
    const task = await this.#store.load(params.id, context);
    if (caller !== undefined && task !== undefined && !isTerminalState(task.status?.state)) this.#executor.cancelTurn(params.id, canceledBy(caller));
    return super.cancelTask(params, context);
  }

  /**
   * The SDK's resubscription follows a task through this process's event bus; for a task it has no
   * bus for (running on another node) it answers the task as it is now and ends. Such a task is
   * followed through the store instead, each new state as a `task` event, until it ends.
   */
  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['resubscribe']> {
    let first: Task | undefined;
    let count = 0;
    for await (const event of super.resubscribe(params, context)) {
      count += 1;
      if (count === 1 && event.payload?.$case === 'task') first = event.payload.value;
      yield event;
    }
    if (count !== 1 || first === undefined || this.#follow === undefined) return;
    for await (const task of this.#follow(first, context)) yield { payload: { $case: 'task', value: task } };
  }
}
