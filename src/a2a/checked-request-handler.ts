import type { AgentCard, CancelTaskRequest, Message, SendMessageRequest, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotCancelableError } from '@a2a-js/sdk/errors';
import {
  DefaultRequestHandler,
  type ExecutionEventBusManager,
  type PushNotificationSender,
  type PushNotificationStore,
  type ServerCallContext,
  type TaskStore,
} from '@a2a-js/sdk/server';
import type { Logger } from '../contracts/index.ts';
import { AccessDeniedError, CapabilityDeniedError } from '../errors/index.ts';
import { PushQueue } from '../kernel/index.ts';
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
  /** The tasks of the agent whose endpoints these are: another agent's task is unknown here (`BoundedTaskStore.ofAgent`). */
  store: TaskStore;
  executor: LoomAgentExecutor;
  /**
   * The event buses of the agent's running tasks, shared by every handler built for the agent (one
   * per origin its requests name): a subscription finds a task's bus whatever origin started it.
   */
  buses: ExecutionEventBusManager;
  logger: Logger;
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
 * or too much of it (RequestMalformedError, -32602). A message that starts a turn, on every
 * binding (JSON-RPC, HTTP+JSON, 0.3, the legacy shim), is charged to its caller here, before the
 * turn starts (see `LoomA2aUser.chargeTurn`); one the SDK refuses before its executor runs (see
 * {@link CheckedRequestHandler.startsTurn}) is not.
 */
export class CheckedRequestHandler extends DefaultRequestHandler {
  readonly #maxBytes: number;
  readonly #follow: CheckedRequestHandlerOptions['follow'];
  readonly #store: TaskStore;
  readonly #executor: LoomAgentExecutor;
  readonly #logger: Logger;

  constructor(options: CheckedRequestHandlerOptions) {
    super(options.card, options.store, options.executor, options.buses, options.pushConfigs, EXECUTOR_DISPATCHES);
    this.#maxBytes = options.maxBytes;
    this.#follow = options.follow;
    this.#store = options.store;
    this.#executor = options.executor;
    this.#logger = options.logger;
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

  /**
   * Whether `message` starts a turn, as far as the task it names goes: a message naming no task
   * does (a new task), one naming a task does when this agent's endpoints reach it for the caller
   * (`TaskNotFound` otherwise), it has not ended and the message's context, if it names one, is
   * the task's (the SDK refuses the others before its executor runs). A message with no id is
   * refused before too.
   */
  async startsTurn(message: Pick<Message, 'messageId' | 'taskId' | 'contextId'> | undefined, context: ServerCallContext): Promise<boolean> {
    if (message === undefined || message.messageId === '') return false;
    if (message.taskId === '') return true;
    const task = await this.#store.load(message.taskId, context);
    if (task === undefined || isTerminalState(task.status?.state)) return false;
    return message.contextId === '' || task.contextId === '' || message.contextId === task.contextId;
  }

  /** Charges the caller for the turn `params` starts, if it starts one (see {@link startsTurn}). */
  async #charge(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    if (await this.startsTurn(params.message, context)) chargeTurnOfContext(context);
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessage']> {
    this.#check(params);
    await this.#charge(params, context);
    return super.sendMessage(params, context);
  }

  /**
   * The SDK saves a streamed task's events in the store as its stream reads them, and stops reading
   * when the stream's client leaves: the task's end (its state, its reply) would never be saved, and
   * GetTask would read it `working` for good. The SDK's stream is read to its end here whether or not
   * the client reads on (A2A: a task's lifecycle is independent of any stream's), in order, so the
   * SDK saves every event; the client is given them as they come, until it leaves.
   */
  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessageStream']> {
    this.#check(params);
    await this.#charge(params, context);
    const lost = (error: unknown): void =>
      this.#logger.warn({ err: error, messageId: params.message?.messageId }, 'A2A streamed task not saved after its client left');
    yield* readToEnd(super.sendMessageStream(params, context), lost);
  }

  /**
   * The SDK reaches a task's executor only through an event bus of the canceller's own (it keeps them
   * per caller), and hears only the events published after it asked: an owner's cancel of another
   * key's task would leave its turn going on, and a creator's whose streaming client had left would
   * miss the task's end. A task the canceller sees is cancelled first, as the kernel lets the
   * canceller, and saved canceled, its status message naming them (`LoomAgentExecutor.cancel`: its
   * turns running here, or one resumed after a restart through the recovery); then the SDK answers
   * the task as it is. A cancel the kernel refuses (a key that may not cancel turns of the agent, an
   * agent that may no longer message it) is answered `TaskNotCancelable`, saying why, and cancels
   * nothing. A task of another agent is unknown here, as to every request to this agent's
   * endpoints.
   */
  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const task = await this.#store.load(params.id, context);
    if (task !== undefined && !isTerminalState(task.status?.state)) {
      try {
        await this.#executor.cancel(task, context);
      } catch (error) {
        if (error instanceof AccessDeniedError || error instanceof CapabilityDeniedError)
          throw new TaskNotCancelableError(`Task not cancelable: ${params.id}: ${error.message}`);
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

/**
 * The events of `events`, read to their end whether or not the returned stream is (its reader may
 * stop at any time: what comes after is read and dropped); a failure met once it stopped goes to
 * `lost`.
 */
async function* readToEnd<T>(events: AsyncIterable<T>, lost: (error: unknown) => void): AsyncGenerator<T> {
  const queue = new PushQueue<{ event: T } | { error: unknown }>();
  let reading = true;
  void (async () => {
    try {
      for await (const event of events) if (reading) queue.push({ event });
    } catch (error) {
      if (reading) queue.push({ error });
      else lost(error);
    } finally {
      queue.close();
    }
  })();
  try {
    for await (const item of queue) {
      if ('error' in item) throw item.error;
      yield item.event;
    }
  } finally {
    reading = false;
  }
}
