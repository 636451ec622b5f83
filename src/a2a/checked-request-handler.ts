import type { AgentCard, CancelTaskRequest, SendMessageRequest, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotCancelableError } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, type PushNotificationSender, type PushNotificationStore, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { AccessDeniedError } from '../errors/index.ts';
import { A2A_INPUT_MODES } from './agent-cards.ts';
import { chargeTurnOfContext, inputTextOf, type LoomAgentExecutor, unsupportedPartOf } from './agent-executor.ts';
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
  /**
   * The executor of the agent named so, if one was built: a task is cancelled through its own
   * agent's, whichever agent's endpoint the cancel came to (as any of them reads it).
   */
  executorOf: (agent: string) => LoomAgentExecutor | undefined;
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
  readonly #executorOf: CheckedRequestHandlerOptions['executorOf'];

  constructor(options: CheckedRequestHandlerOptions) {
    super(options.card, options.store, options.executor, undefined, options.pushConfigs, EXECUTOR_DISPATCHES);
    this.#maxBytes = options.maxBytes;
    this.#follow = options.follow;
    this.#store = options.store;
    this.#executorOf = options.executorOf;
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
   * The SDK reaches a task's executor only through an event bus of the canceller's own (it keeps them
   * per caller), and hears only the events published after it asked: an owner's cancel of another
   * key's task would leave its turn going on, and a creator's whose streaming client had left would
   * miss the task's end. The turns of a task the canceller sees, running here, are cancelled first,
   * as the kernel lets the canceller (naming them), and the task saved canceled (`cancelTurns`); then
   * the SDK answers the task as it is (a task no turn runs here, it marks canceled itself). A cancel
   * the kernel refuses is answered `TaskNotCancelable`, saying why, and cancels nothing.
   */
  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const task = await this.#store.load(params.id, context);
    const agent: unknown = task?.metadata?.['loomAgent'];
    if (task !== undefined && !isTerminalState(task.status?.state) && typeof agent === 'string') {
      try {
        await this.#executorOf(agent)?.cancelTurns(task, context);
      } catch (error) {
        if (error instanceof AccessDeniedError) throw new TaskNotCancelableError(`Task not cancelable: ${params.id}: ${error.message}`);
        throw error;
      }
    }
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
