import { randomUUID } from 'node:crypto';
import { type AgentCard, type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { LOOM_VERSION } from '../config/installation.ts';
import { textPart } from './agent-executor.ts';
import { isTerminalState } from './bounded-task-store.ts';
import { resultText } from './task-views.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { traceContextFields } from '../telemetry/spans.ts';

/** Timeout of card fetches and of each request to a peer (spec/05: 30 s). */
export const A2A_CLIENT_TIMEOUT_MS = 30_000;

/** `Loom/<version> A2A`, sent with every request to a peer. */
export function a2aUserAgent(version = LOOM_VERSION): string {
  return `Loom/${version} A2A`;
}

/** Options of the client's calls. */
export interface A2aClientOptions {
  /** Per request, default 30 s. */
  timeoutMs?: number;
  /** Loom's version, for the User-Agent. */
  version?: string;
  signal?: AbortSignal;
  /** Instead of the global fetch (tests). */
  fetchImpl?: typeof fetch;
}

/** `fetch` with Loom's User-Agent, the request timeout, and the active span's trace context. */
function fetchWith(options: A2aClientOptions): typeof fetch {
  const base = options.fetchImpl ?? fetch;
  const userAgent = a2aUserAgent(options.version);
  const timeoutMs = options.timeoutMs ?? A2A_CLIENT_TIMEOUT_MS;
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('user-agent', userAgent);
    // The caller's trace goes with the request (W3C `traceparent`), so the peer's spans join it.
    for (const [name, value] of Object.entries(traceContextFields())) headers.set(name, value);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signals = [timeout, init?.signal, options.signal].filter((signal): signal is AbortSignal => signal !== undefined && signal !== null);
    return base(input, { ...init, headers, signal: AbortSignal.any(signals) });
  };
}

/**
 * Fetches a peer's card: `url` itself when it names a card (`….json`), else
 * `{url}/.well-known/agent-card.json`, falling back to spec/05's `{url}/.well-known/agent.json`.
 * A2A 0.3 cards are translated to 1.0 by the SDK.
 */
export async function discoverAgent(url: string, options: A2aClientOptions = {}): Promise<AgentCard> {
  const resolver = new DefaultAgentCardResolver({ fetchImpl: fetchWith(options), legacyCompat: { enabled: true } });
  if (url.endsWith('.json')) return resolver.resolve(url, '');
  const base = url.endsWith('/') ? url.slice(0, -1) : url;
  try {
    return await resolver.resolve(`${base}/.well-known/agent-card.json`, '');
  } catch (error) {
    try {
      return await resolver.resolve(`${base}/.well-known/agent.json`, '');
    } catch {
      throw error;
    }
  }
}

/** An SDK client for a peer's card (JSON-RPC or HTTP+JSON, A2A 1.0 or 0.3, as the card offers). */
export function clientFor(card: AgentCard, options: A2aClientOptions = {}): Promise<Client> {
  const fetchImpl = fetchWith(options);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
        new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      ],
    }),
  );
  return factory.createFromAgentCard(card);
}

/** What a peer answered. */
export interface A2aSendResult {
  taskId: string | null;
  /** `completed`, `failed`, `canceled`, `input-required`, … (`message` for a direct reply). */
  state: string;
  text: string;
}

function stateName(state: TaskState | undefined): string {
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_FAILED:
      return 'failed';
    case TaskState.TASK_STATE_CANCELED:
      return 'canceled';
    case TaskState.TASK_STATE_REJECTED:
      return 'rejected';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return 'input-required';
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return 'auth-required';
    case TaskState.TASK_STATE_WORKING:
      return 'working';
    default:
      return 'submitted';
  }
}

function userMessage(text: string): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const POLL_INTERVAL_MS = 500;

/**
 * Sends `message` to the peer of `card` and waits for the outcome: streaming when the peer
 * supports it, else a send followed by polling `GetTask` until the task ends or needs input.
 */
export async function sendA2aMessage(card: AgentCard, message: string, options: A2aClientOptions = {}): Promise<A2aSendResult> {
  const client = await clientFor(card, options);
  const request = { tenant: '', message: userMessage(message), configuration: undefined, metadata: undefined };
  const requestOptions = options.signal === undefined ? undefined : { signal: options.signal };
  if (card.capabilities?.streaming === true) {
    let task: Task | undefined;
    let text = '';
    for await (const event of client.sendMessageStream(request, requestOptions)) {
      const payload = event.payload;
      if (payload === undefined) continue;
      if (payload.$case === 'message') return { taskId: null, state: 'message', text: resultText(payload.value) };
      if (payload.$case === 'task') task = payload.value;
      if (payload.$case === 'artifactUpdate' && task !== undefined) {
        const chunk = resultText({ ...task, artifacts: payload.value.artifact === undefined ? [] : [payload.value.artifact], status: undefined });
        text = payload.value.append ? text + chunk : chunk;
      }
      if (payload.$case === 'statusUpdate' && task !== undefined) {
        task = { ...task, status: payload.value.status };
        const state = payload.value.status?.state;
        if (isTerminalState(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED) break;
      }
    }
    if (task === undefined) throw new Error('the peer ended the stream without a task');
    const final = await client.getTask({ tenant: '', id: task.id, historyLength: undefined }, requestOptions).catch(() => undefined);
    const done = final ?? task;
    const finalText = resultText(done);
    return { taskId: done.id, state: stateName(done.status?.state), text: finalText !== '' ? finalText : text };
  }
  let result = await client.sendMessage(request, requestOptions);
  if ('messageId' in result) return { taskId: null, state: 'message', text: resultText(result) };
  while (!isTerminalState(result.status?.state) && result.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    options.signal?.throwIfAborted();
    result = await client.getTask({ tenant: '', id: result.id, historyLength: undefined }, requestOptions);
  }
  return { taskId: result.id, state: stateName(result.status?.state), text: resultText(result) };
}
