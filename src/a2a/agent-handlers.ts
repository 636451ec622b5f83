/**
 * `AgentHandlers`: the SDK's request handlers of each agent (A2A 1.0 JSON-RPC, 0.3 JSON-RPC and
 * the 0.3 HTTP+JSON router), over one executor and one set of task event buses per agent, built
 * once per agent and again when its origin (the card's URLs follow the request's Host), or whether
 * keys are asked, changes; and the following of a task another node runs.
 */
import { type AgentCard, Task, type Task as TaskValue } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { DefaultExecutionEventBusManager, JsonRpcTransportHandler, type ServerCallContext } from '@a2a-js/sdk/server';
import type { Context } from 'hono';
import type { IncomingMessage } from 'node:http';
import type { Clock, Logger } from '../contracts/index.ts';
import type { AgentDetailView, Caller, Kernel } from '../kernel/index.ts';
import { type A2aAccess, originOf } from './a2a-access.ts';
import type { A2aRequests } from './a2a-requests.ts';
import { LoomA2aUser, LoomAgentExecutor } from './agent-executor.ts';
import { type BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import { CheckedRequestHandler } from './checked-request-handler.ts';
import { createLegacyRestListener, type NodeRequestListener } from './legacy-rest-bridge.ts';
import type { LoomPushConfigStore } from './push-config-store.ts';
import type { PushNotifier } from './push-notifier.ts';

/** How often a task running on another node is read again while a client here follows it, when no event of its agent came first. */
const FOLLOW_POLL_MS = 500;

/** A caller that reaches no agent: a viewer limited to none (what a request with no caller set gets, were there one). */
const NOBODY: Caller = { kind: 'user', role: 'viewer', agents: [] };

/** The SDK's handlers of one agent. */
export interface AgentSdkHandlers {
  handler: CheckedRequestHandler;
  jsonRpc: JsonRpcTransportHandler;
  legacy: LegacyJsonRpcTransportHandler;
  /** The SDK's 0.3 HTTP+JSON router, when the SDK has one. */
  legacyRest: Promise<NodeRequestListener | undefined>;
  origin: string;
  keyed: boolean;
}

/** What the handlers are built on. */
export interface AgentHandlersParts {
  kernel: Kernel;
  logger: Logger;
  store: BoundedTaskStore;
  access: A2aAccess;
  requests: A2aRequests;
  /** The agent's card, as served at `origin`. */
  cardOf(agent: AgentDetailView, origin: string, keyed: boolean): AgentCard;
  /** Largest message text accepted, in UTF-8 bytes. */
  maxMessageBytes: number;
  notifier: PushNotifier | undefined;
  pushConfigs: LoomPushConfigStore | undefined;
  /** Paces the following of a task another node runs; without it such a task is answered as it is. */
  clock: Clock | undefined;
}

/** The SDK handlers of the agents, per agent. */
export class AgentHandlers {
  readonly #parts: AgentHandlersParts;
  readonly #executors = new Map<string, LoomAgentExecutor>();
  /**
   * The event buses of each agent's running tasks, kept across the handlers built for it: a
   * SubscribeToTask naming another Host than the message that started the task follows its bus,
   * not the store.
   */
  readonly #buses = new Map<string, DefaultExecutionEventBusManager>();
  readonly #handlers = new Map<string, AgentSdkHandlers>();
  /** The caller of each request handed to the SDK's 0.3 HTTP+JSON router, and its turn's charge (by its Node request). */
  readonly #legacyRestUsers = new WeakMap<IncomingMessage, LoomA2aUser>();

  constructor(parts: AgentHandlersParts) {
    this.#parts = parts;
  }

  /** The SDK handlers of an agent for request `c`, built once per agent (and again if its origin, or whether keys are asked, changes). */
  of(agent: AgentDetailView, c: Context): AgentSdkHandlers {
    const parts = this.#parts;
    const origin = originOf(c);
    const keyed = parts.access.keyedFor(parts.access.readerOf(c));
    const cached = this.#handlers.get(agent.name);
    if (cached !== undefined && cached.origin === origin && cached.keyed === keyed) return cached;
    const { name } = agent;
    let executor = this.#executors.get(name);
    if (executor === undefined) {
      const { notifier } = parts;
      executor = new LoomAgentExecutor({
        kernel: parts.kernel,
        agent: name,
        logger: parts.logger,
        store: parts.store.ofAgent(name),
        observe: notifier === undefined ? undefined : (event) => notifier.observe(name, event),
      });
      this.#executors.set(name, executor);
    }
    let buses = this.#buses.get(name);
    if (buses === undefined) {
      buses = new DefaultExecutionEventBusManager();
      this.#buses.set(name, buses);
    }
    const handler = new CheckedRequestHandler({
      card: parts.cardOf(agent, origin, keyed),
      // A task is reached through its own agent's endpoints only (decision 0045).
      store: parts.store.ofAgent(name),
      executor,
      buses,
      logger: parts.logger,
      maxBytes: parts.maxMessageBytes,
      pushConfigs: parts.pushConfigs,
      follow: (task, context) => this.#followElsewhere(name, task, context),
    });
    // Every request reaching the listener was given its caller (`setLegacyRestUser`); one that was not reaches nothing.
    const legacyRest = createLegacyRestListener(handler, (request) => this.#legacyRestUsers.get(request) ?? new LoomA2aUser(NOBODY), parts.logger);
    const built: AgentSdkHandlers = {
      handler,
      jsonRpc: new JsonRpcTransportHandler(handler),
      legacy: new LegacyJsonRpcTransportHandler(handler),
      legacyRest,
      origin,
      keyed,
    };
    this.#handlers.set(agent.name, built);
    return built;
  }

  /** Gives a Node request handed to the 0.3 HTTP+JSON router its caller and its turn's charge. */
  setLegacyRestUser(incoming: IncomingMessage, user: LoomA2aUser): void {
    this.#legacyRestUsers.set(incoming, user);
  }

  /** Aborts the running tasks of every agent. */
  abortAll(): void {
    for (const executor of this.#executors.values()) executor.abortAll();
  }

  /** Each new state of a task this process runs no bus for (another node runs it), read from the store until it ends or the client leaves. */
  async *#followElsewhere(agent: string, first: TaskValue, context: ServerCallContext): AsyncGenerator<TaskValue> {
    const { clock, kernel, store, requests } = this.#parts;
    const signal = requests.signalOf(context);
    if (clock === undefined || signal === undefined) return;
    let seen = JSON.stringify(Task.toJSON(first));
    let wake = new AbortController();
    // Another node's turn events reach this node's bus: read the task again at once.
    const unsubscribe = kernel.events.subscribe((event) => {
      if (event.name === agent) wake.abort();
    });
    try {
      while (!signal.aborted) {
        await clock.sleep(FOLLOW_POLL_MS, { signal: AbortSignal.any([signal, wake.signal]) }).catch(() => undefined);
        if (signal.aborted) return;
        if (wake.signal.aborted) wake = new AbortController();
        const task = await store.load(first.id, context);
        if (task === undefined) return;
        const now = JSON.stringify(Task.toJSON(task));
        if (now === seen) continue;
        seen = now;
        yield task;
        if (isTerminalState(task.status?.state)) return;
      }
    } finally {
      unsubscribe();
    }
  }
}
