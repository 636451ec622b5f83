import { randomUUID } from 'node:crypto';
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  ResultManager,
  type TaskStore,
} from '@a2a-js/sdk/server';
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import { LOCAL_PRINCIPAL_NAME, principalKey } from '../access/index.ts';
import { type Caller, callerOf, type Kernel, kernelAs, principalOfCaller, reachesAgent, refusalOf } from '../kernel/index.ts';
import type { JsonObject, Logger } from '../contracts/index.ts';
import { isLoomError, turnCancelledBy } from '../errors/index.ts';
import type { AgentEvent as LoomEvent } from '../runtime/index.ts';
import { kernelOfTask, lastMessageOf, placeOfTaskTurn, type TaskTurnPlace, taskTurnKey } from './task-turn-places.ts';

/** The caller of an A2A request, as the kernel checks it (carried by the SDK's call context). */
export class LoomA2aUser implements User {
  readonly caller: Caller;
  /** Charges the request's client for the turn a message starts (the API's rate limit); throws when it is out. */
  readonly chargeTurn: (() => void) | undefined;
  constructor(caller: Caller, chargeTurn?: () => void) {
    this.caller = caller;
    this.chargeTurn = chargeTurn;
  }
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return callerName(this.caller);
  }
}

/** The name a task records as its creator: the API key's name (`local` without keys), or the calling agent's id. */
export function callerName(caller: Caller): string {
  return caller.kind === 'user' ? (caller.name ?? LOCAL_PRINCIPAL_NAME) : caller.agentId;
}

/**
 * Who the caller is, whole, as a task records its creator (`loomCallerKey`): a key's name, role
 * and agents together (see `principalKey`), or the calling agent's id.
 */
export function callerKey(caller: Caller): string {
  return caller.kind === 'user' ? principalKey(principalOfCaller(caller)) : `agent:${caller.agentId}`;
}

/**
 * The caller a task records as its creator (`loomCallerKey`, see {@link callerKey}), as the kernel
 * checks it; undefined when the key is not one Loom writes. An agent is given no chain of messages
 * (the key does not keep it).
 */
export function callerOfKey(key: string): Caller | undefined {
  if (key.startsWith('agent:')) return { kind: 'agent', agentId: key.slice('agent:'.length), chain: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(key);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  const [name, role, agents] = parsed as unknown[];
  if (typeof name !== 'string' || (role !== 'owner' && role !== 'user' && role !== 'viewer')) return undefined;
  if (!Array.isArray(agents) || !agents.every((pattern) => typeof pattern === 'string')) return undefined;
  return callerOf({ name, role, agents });
}

/** The task's `response` artifact holding `text`: the agent's reply, streamed into it or given whole. */
export function responseArtifact(taskId: string, text: string): Artifact {
  return { artifactId: `${taskId}-response`, name: 'response', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] };
}

/**
 * Whether a task's turn ended cancelled rather than failed: cancelled by someone else than the
 * task's client (`TURN_CANCELLED`, as the journal keeps it too), or stopped by Loom mid-way (the
 * daemon shutting down, its agent killed or suspended: `AGENT_STATE` with `stopped` in its details).
 * A message refused at admission (an agent suspended before it came: `AGENT_STATE` alone) is not.
 */
export function turnWasCanceled(code: string, details: JsonObject | undefined): boolean {
  return code === 'TURN_CANCELLED' || (code === 'AGENT_STATE' && details?.['stopped'] !== undefined);
}

/** What a task says when its turn was cancelled (see {@link turnWasCanceled}): the same whether the executor saw it end or a later start read its end from the journal. */
export function turnCanceledText(reason: string): string {
  return `The task was canceled: ${reason}`;
}

/** The status message of a task whose turn waits for a human's approval of a tool call. */
export function approvalMessage(taskId: string, contextId: string, event: Extract<LoomEvent, { type: 'approval-request' }>): Message {
  return agentMessage(
    taskId,
    contextId,
    `The tool ${event.toolName} is waiting for a human's approval (approval ${event.approvalId}, until ${event.expiresAt}).`,
  );
}

/**
 * Whether the A2A caller may see `task`: owners (and Loom itself, with no caller) see every
 * task; any other key only a task of an agent it reaches that it created itself, the same
 * principal (name, role and agents: a key sharing only the creator's name is another). A task
 * stored without its creator whole (as before this was recorded) is seen by owners only. A task it
 * may not see is answered as missing, never as forbidden, so task ids cannot be probed.
 */
export function isTaskVisible(task: Task, caller: Caller | undefined): boolean {
  if (caller === undefined || seesEveryTask(caller)) return true;
  const agent: unknown = task.metadata?.['loomAgent'];
  const creator: unknown = task.metadata?.['loomCallerKey'];
  if (typeof agent !== 'string' || creator !== callerKey(caller)) return false;
  return caller.kind !== 'user' || reachesAgent(principalOfCaller(caller), agent);
}

/** Whether the caller sees every task: an owner, or Loom itself (no caller). */
export function seesEveryTask(caller: Caller | undefined): boolean {
  return caller === undefined || (caller.kind === 'user' && refusalOf(principalOfCaller(caller), 'read every A2A task') === undefined);
}

/** The caller of an SDK call, when Loom's door put one in its context. */
export function callerOfContext(context: ServerCallContext | undefined): Caller | undefined {
  const user = context?.user;
  return user instanceof LoomA2aUser ? user.caller : undefined;
}

/**
 * Charges the caller of an SDK call for the turn its message starts, when Loom's door put a
 * charge in its context. @throws what the charge throws (the API's `RATE_LIMITED`).
 */
export function chargeTurnOfContext(context: ServerCallContext | undefined): void {
  const user = context?.user;
  if (user instanceof LoomA2aUser) user.chargeTurn?.();
}

/**
 * Who cancels a task, as its turns' ends and its status message name them: a key as the kernel
 * names it (`CallerKernel.byline`: `"admin"`, `the owner` without keys), an agent as
 * `agent "<name>"` (its id once it is gone).
 */
export function cancellerByline(kernel: Kernel, caller: Caller): string {
  if (caller.kind === 'user') return kernelAs(kernel, principalOfCaller(caller)).byline;
  let name = caller.agentId;
  try {
    name = kernel.get(caller.agentId).name;
  } catch {
    // Gone: named by its id.
  }
  return `agent "${name}"`;
}

/**
 * The update that ends a task canceled: its status message says who cancelled it (`by`, see
 * {@link cancellerByline}, or the reason its turns were aborted with), as its turns' ends do.
 */
export function canceledUpdate(taskId: string, contextId: string, by?: string | Error): AgentExecutionEvent {
  const reason = typeof by === 'string' ? turnCancelledBy(by) : by;
  const text = reason === undefined ? 'The task was canceled.' : turnCanceledText(reason.message);
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state: TaskState.TASK_STATE_CANCELED, message: agentMessage(taskId, contextId, text), timestamp: new Date().toISOString() },
    metadata: undefined,
  });
}

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** The text of a message's text parts, joined by blank lines. */
export function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .filter((text) => text !== '')
    .join('\n\n');
}

/**
 * What a client's message says, as the text a Loom agent is given: its text parts, and its
 * `data` parts as JSON text, joined by blank lines. Other parts (files) are refused before a task
 * starts (see `unsupportedPartOf`), so none are left out silently.
 */
export function inputTextOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((part) => {
      if (part.content?.$case === 'text') return part.content.value;
      if (part.content?.$case === 'data') return JSON.stringify(part.content.value ?? null);
      return '';
    })
    .filter((text) => text !== '')
    .join('\n\n');
}

/**
 * The first part of `message` a Loom agent cannot take, described for an error message (its kind
 * and media type), or undefined when every part is text or data.
 */
export function unsupportedPartOf(message: Message | undefined): string | undefined {
  for (const part of message?.parts ?? []) {
    const kind = part.content?.$case;
    if (kind === 'text' || kind === 'data') continue;
    const mediaType = part.mediaType === '' ? 'no media type' : `media type "${part.mediaType}"`;
    const what = kind === 'raw' ? 'a file (bytes)' : kind === 'url' ? 'a file (URL)' : 'a part with no content';
    return `${what} of ${mediaType}${part.filename === '' ? '' : ` named "${part.filename}"`}`;
  }
  return undefined;
}

/** An agent's message in a task. */
export function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** What a {@link LoomAgentExecutor} runs on. */
export interface LoomAgentExecutorOptions {
  kernel: Kernel;
  /** The agent whose turns run the tasks. */
  agent: string;
  logger: Logger;
  /** The task store the executor records its own events in once the SDK stops (see the class). */
  store?: TaskStore | undefined;
  /**
   * Given every event the executor publishes, in order, to the task's end (push notifications:
   * the SDK's own event queue stops reading at `input-required`).
   */
  observe?: ((event: AgentExecutionEvent) => void) | undefined;
}

/** A turn the executor runs for a task: one per message sent to it (a message to a task waiting for an approval starts another). */
interface TaskRun {
  controller: AbortController;
  /** Set once it published the task's end (or a cancel did): it publishes nothing more. */
  finished: boolean;
  contextId: string;
  /** Where the turn of the message that started it is journaled (`placeOfTaskTurn`): its key, in its conversation. */
  place: TaskTurnPlace | undefined;
  /** Who sent that message: the turn is theirs. */
  caller: Caller;
  bus: ExecutionEventBus;
  record: (event: AgentExecutionEvent) => void;
}

/**
 * Runs A2A tasks as turns of one Loom agent through `kernel.stream`, mapping its events to task
 * status and artifact updates: text deltas stream into the `response` artifact, an approval
 * request puts the task in `input-required`, the finish completes it; cancel aborts the turn.
 *
 * The SDK stops recording a task's events once it reaches `input-required` (an interrupted state:
 * it expects the client's next message to resume it), but a Loom turn goes on by itself once a
 * human decides the approval: from then on the executor records its own events in the task store
 * (given `store`), so GetTask follows the task to its end.
 */
export class LoomAgentExecutor implements AgentExecutor {
  readonly #kernel: Kernel;
  readonly #agent: string;
  readonly #logger: Logger;
  readonly #store: TaskStore | undefined;
  readonly #observe: ((event: AgentExecutionEvent) => void) | undefined;
  /** The turns running for each task, by task id: a task's second message starts a second while the first waits for an approval. */
  readonly #running = new Map<string, Set<TaskRun>>();

  constructor(options: LoomAgentExecutorOptions) {
    this.#kernel = options.kernel;
    this.#agent = options.agent;
    this.#logger = options.logger;
    this.#store = options.store;
    this.#observe = options.observe;
  }

  #published(bus: ExecutionEventBus, event: AgentExecutionEvent): void {
    bus.publish(event);
    this.#observe?.(event);
  }

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = request;
    const user = request.context.user;
    const caller: Caller = user instanceof LoomA2aUser ? user.caller : { kind: 'user', role: 'owner' };
    // Set once the task was interrupted (input-required): the events the SDK no longer records.
    let recorder: ResultManager | undefined;
    let recorded = Promise.resolve();
    const record = (event: AgentExecutionEvent): void => {
      const manager = recorder;
      if (manager === undefined) return;
      recorded = recorded
        .then(() => manager.processEvent(event))
        .catch((error: unknown) => {
          this.#logger.warn({ err: error, taskId, agent: this.#agent }, 'A2A task update not recorded');
        });
    };
    const publish = (event: AgentExecutionEvent): void => {
      this.#published(bus, event);
      record(event);
    };
    const run: TaskRun = { controller: new AbortController(), finished: false, contextId, place: undefined, caller, bus, record };
    const runs = this.#running.get(taskId) ?? new Set<TaskRun>();
    runs.add(run);
    this.#running.set(taskId, runs);
    const status = (state: TaskState, message?: Message, metadata?: Record<string, unknown>): void => {
      if (run.finished) return;
      if (state !== TaskState.TASK_STATE_WORKING && state !== TaskState.TASK_STATE_INPUT_REQUIRED) run.finished = true;
      publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata }));
      if (state === TaskState.TASK_STATE_INPUT_REQUIRED && this.#store !== undefined) recorder ??= new ResultManager(this.#store, request.context);
    };
    const artifact = (text: string, append: boolean, lastChunk: boolean): void => {
      if (run.finished) return;
      publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: responseArtifact(taskId, text),
          append,
          lastChunk,
          metadata: undefined,
        }),
      );
    };
    try {
      if (request.task === undefined) {
        this.#published(
          bus,
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
            artifacts: [],
            history: [request.userMessage],
            // Set after the client's metadata, so neither can be claimed by a client.
            metadata: { ...(request.request.metadata ?? {}), loomAgent: this.#agent, loomCaller: callerName(caller), loomCallerKey: callerKey(caller) },
          }),
        );
      } else {
        this.#published(bus, AgentEvent.task(request.task));
      }
      status(TaskState.TASK_STATE_WORKING);
      const text = inputTextOf(request.userMessage);
      let reply = '';
      // Its key: after a restart the task finds the turn, resumed or ended (task-recovery.ts), and
      // the same message sent again gets it.
      const kernel = kernelOfTask(this.#kernel, caller, contextId);
      const place = await placeOfTaskTurn(kernel, this.#agent, {
        taskId,
        messageId: request.userMessage.messageId,
        contextId,
        isNew: request.task === undefined,
      });
      run.place = place;
      const events = kernel.stream(this.#agent, text, { signal: run.controller.signal, door: 'a2a', idempotencyKey: place.key, thread: place.thread });
      for await (const event of events) {
        if (run.finished) break;
        switch (event.type) {
          case 'text-delta':
            artifact(event.text, reply !== '', false);
            reply += event.text;
            break;
          case 'tool-call':
            status(TaskState.TASK_STATE_WORKING, undefined, { loom: { event: 'tool-call', tool: event.toolName } });
            break;
          case 'approval-request':
            status(TaskState.TASK_STATE_INPUT_REQUIRED, approvalMessage(taskId, contextId, event), {
              loom: { event: 'approval-request', approvalId: event.approvalId, tool: event.toolName },
            });
            break;
          case 'tool-result':
            status(TaskState.TASK_STATE_WORKING, undefined, { loom: { event: 'tool-result', tool: event.toolName, isError: event.isError } });
            break;
          case 'run-finish':
            artifact(event.result.text, false, true);
            status(TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, event.result.text));
            break;
          case 'error':
            if (run.controller.signal.aborted) status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, 'The task was canceled.'));
            else if (turnWasCanceled(event.code, event.details))
              status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, turnCanceledText(event.message)));
            else status(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, `${event.code}: ${event.message}`));
            break;
          default:
            break;
        }
      }
      if (run.controller.signal.aborted) status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, 'The task was canceled.'));
      else status(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, 'The turn ended without a result.'));
    } catch (error) {
      this.#logger.warn({ err: error, taskId, agent: this.#agent }, 'A2A task failed');
      if (run.controller.signal.aborted) status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, 'The task was canceled.'));
      else if (isLoomError(error) && turnWasCanceled(error.code, error.details))
        status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, turnCanceledText(error.message)));
      else status(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, error instanceof Error ? error.message : String(error)));
    } finally {
      // Its own entry only: another turn of the task may run on.
      runs.delete(run);
      if (runs.size === 0 && this.#running.get(taskId) === runs) this.#running.delete(taskId);
      await recorded;
      bus.finished();
    }
  };

  /**
   * The SDK's cancel, through an event bus of the canceller's own (`bus`, the task's creator's):
   * aborts the task's turns and publishes its end, canceled, there. A cancel through Loom's request
   * handler has done so already (see {@link cancel}); this serves a request with no Loom caller.
   */
  cancelTask = (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const ended = this.#stop(taskId);
    if (ended !== undefined) {
      for (const each of new Set([bus, ...ended.buses])) each.publish(ended.event);
      ended.record(ended.event);
    }
    return Promise.resolve();
  };

  /**
   * Cancels `task` (not ended) as the caller of `context` (its request's), naming them
   * ({@link cancellerByline}), and saves it canceled before this resolves. The kernel judges the
   * canceller first, whether or not a turn of the task runs here: a key must be allowed to cancel
   * turns of the agent, an agent (which reaches only its own tasks) to message it still (its look-up
   * of the task's turn, as the recovery makes it, is refused otherwise). Then:
   * - its turns running here: a key's cancel of each is the kernel's to judge
   *   (`CallerKernel.cancelKeyedTurn`: an owner any task's turn, any other key its own), an agent
   *   cancels them through their requests' signals; each turn ends saying who cancelled it, and the
   *   task is saved canceled whoever reads its events (none once it waited for an approval: the SDK
   *   stops reading them at `input-required`), then published to those who do;
   * - no turn of it runs in this process (one resumed after a restart, or running on another node):
   *   the task is saved canceled, naming them; the recovery then cancels a resumed turn as them
   *   (`BoundedTaskStore.onCanceled`).
   * Does nothing when the request has no Loom caller (the SDK's cancel goes on as it does), or a
   * turn of the task here has published its end already.
   * @throws {AccessDeniedError} {CapabilityDeniedError} the kernel's refusal, before any turn is
   *   cancelled or the task saved.
   */
  async cancel(task: Task, context: ServerCallContext): Promise<void> {
    const runs = this.#running.get(task.id);
    const canceller = callerOfContext(context);
    if (canceller === undefined) return;
    if (canceller.kind === 'agent') await this.#judgeAgent(task, canceller);
    else {
      const face = kernelAs(this.#kernel, principalOfCaller(canceller));
      face.require('cancel turns', this.#agent);
      // Each by its own key: a turn the journal keeps is cancelled by the kernel, wherever it waits.
      for (const { place, caller } of runs ?? []) {
        // Not yet looked up: its turn has not started (its signal stops it).
        if (place !== undefined) await face.cancelKeyedTurn(this.#agent, place.key, { caller, thread: place.thread });
      }
    }
    const by = cancellerByline(this.#kernel, canceller);
    // And through its request's signal: one the journal does not keep (an agent type whose turns are not journaled).
    const ended = runs === undefined ? { event: canceledUpdate(task.id, task.contextId, by), buses: [] } : this.#stop(task.id, turnCancelledBy(by));
    if (ended === undefined) return;
    for (const bus of ended.buses) bus.publish(ended.event);
    if (this.#store !== undefined) await new ResultManager(this.#store, context).processEvent(ended.event);
  }

  /**
   * Asks the kernel whether `agent` may cancel `task`'s turns: whether it may message the task's
   * agent still, as its look-up of the task's turn checks (the recovery cancels a resumed turn so).
   * @throws {CapabilityDeniedError} {AccessDeniedError} the kernel's refusal.
   */
  async #judgeAgent(task: Task, agent: Caller): Promise<void> {
    await kernelOfTask(this.#kernel, agent, task.contextId).keyedTurn(this.#agent, taskTurnKey(task.id, lastMessageOf(task)?.messageId ?? ''));
  }

  /**
   * Aborts the task's turns here (`reason`: why, naming who cancelled it) and ends the task: its
   * canceled status, told to `observe`, for the caller to publish on the buses of the turns not
   * ended yet. Undefined when none was under way.
   */
  #stop(
    taskId: string,
    reason?: Error,
  ): { event: AgentExecutionEvent; buses: Set<ExecutionEventBus>; record: (event: AgentExecutionEvent) => void } | undefined {
    const runs = [...(this.#running.get(taskId) ?? [])];
    for (const run of runs) run.controller.abort(reason);
    const open = runs.filter((run) => !run.finished);
    const last = open.at(-1);
    if (last === undefined) return undefined;
    for (const run of open) run.finished = true;
    const event = canceledUpdate(taskId, last.contextId, reason);
    this.#observe?.(event);
    return { event, buses: new Set(open.map((run) => run.bus)), record: last.record };
  }

  /** Aborts every running task (shutdown). */
  abortAll(): void {
    for (const runs of this.#running.values()) for (const run of runs) run.controller.abort();
  }
}
