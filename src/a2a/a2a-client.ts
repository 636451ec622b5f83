import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { type AgentCard, type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { z } from 'zod';
import type { Logger, Tool } from '../contracts/index.ts';
import { textPart } from './agent-executor.ts';
import { isTerminalState } from './bounded-task-store.ts';
import { resultText } from './a2a-routes.ts';

/** Timeout of card fetches and of each request to a peer (spec/05: 30 s). */
export const A2A_CLIENT_TIMEOUT_MS = 30_000;

/** Loom's version, from package.json. */
export function loomVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('../../package.json') as { version: string }).version;
}

/** `Loom/<version> A2A`, sent with every request to a peer. */
export function a2aUserAgent(version = loomVersion()): string {
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

function fetchWith(options: A2aClientOptions): typeof fetch {
  const base = options.fetchImpl ?? fetch;
  const userAgent = a2aUserAgent(options.version);
  const timeoutMs = options.timeoutMs ?? A2A_CLIENT_TIMEOUT_MS;
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('user-agent', userAgent);
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
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }), new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
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
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
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

/** An external agent of `[[a2a.external_agents]]`, as `GET /api/a2a/external` and `loom a2a list` show it. */
export interface ExternalAgentView {
  name: string;
  url: string;
  status: 'pending' | 'discovered' | 'failed';
  description: string | null;
  skills: string[];
  streaming: boolean;
  error: string | null;
  discovered_at: string | null;
}

/** The external agents and their cards, discovered at daemon start. */
export class ExternalAgentRegistry {
  readonly #agents = new Map<string, { view: ExternalAgentView; card: AgentCard | undefined }>();

  /** Replaces the configured agents (all pending). */
  configure(agents: readonly { name: string; url: string }[]): void {
    this.#agents.clear();
    for (const agent of agents) this.#agents.set(agent.name, { view: { name: agent.name, url: agent.url, status: 'pending', description: null, skills: [], streaming: false, error: null, discovered_at: null }, card: undefined });
  }

  /**
   * Fetches every configured agent's card (in parallel, 30 s each). Never throws: failures are
   * logged and shown as `failed`. Do not await it on the start path.
   */
  async discoverAll(logger: Logger, options: A2aClientOptions = {}): Promise<void> {
    await Promise.all(
      [...this.#agents.values()].map(async (entry) => {
        try {
          const card = await discoverAgent(entry.view.url, options);
          entry.card = card;
          entry.view = { ...entry.view, status: 'discovered', description: card.description, skills: card.skills.map((skill) => skill.id), streaming: card.capabilities?.streaming === true, error: null, discovered_at: new Date().toISOString() };
          logger.info({ agent: entry.view.name, url: entry.view.url, skills: card.skills.length }, 'discovered an external A2A agent');
        } catch (error) {
          entry.view = { ...entry.view, status: 'failed', error: error instanceof Error ? error.message : String(error) };
          logger.warn({ agent: entry.view.name, url: entry.view.url, err: error }, 'could not discover an external A2A agent');
        }
      }),
    );
  }

  list(): ExternalAgentView[] {
    return [...this.#agents.values()].map((entry) => ({ ...entry.view }));
  }

  /** The agent's card, discovering it now if it was not (or failed). Undefined for an unknown name. */
  async card(name: string, options: A2aClientOptions = {}): Promise<AgentCard | undefined> {
    const entry = this.#agents.get(name);
    if (entry === undefined) return undefined;
    entry.card ??= await discoverAgent(entry.view.url, options);
    return entry.card;
  }
}

/** The registry the daemon fills at start and `a2a_send` reads. */
export const externalAgents = new ExternalAgentRegistry();

/** What `GET /api/a2a/external` answers: `{ agents, total }`. */
export function listExternalAgents(registry: ExternalAgentRegistry = externalAgents): { agents: ExternalAgentView[]; total: number } {
  const agents = registry.list();
  return { agents, total: agents.length };
}

/** Configures the registry from `[a2a]` and starts discovery in the background (never blocks, never throws). */
export function startExternalDiscovery(config: { a2a: { enabled: boolean; external_agents: readonly { name: string; url: string }[] } }, logger: Logger, registry: ExternalAgentRegistry = externalAgents, options: A2aClientOptions = {}): Promise<void> {
  registry.configure(config.a2a.enabled ? config.a2a.external_agents : []);
  return registry.discoverAll(logger.child({ component: 'a2a' }), options).catch(() => undefined);
}

const A2aSendInput = z.strictObject({
  agent: z.string().min(1).describe('The name of the external agent ([[a2a.external_agents]])'),
  message: z.string().min(1).describe('The task for it'),
});

/** Builds `a2a_send` on a registry. */
export function createA2aSendTool(registry: ExternalAgentRegistry): Tool<z.output<typeof A2aSendInput>> {
  return {
    name: 'a2a_send',
    description: 'Send a task to an external A2A agent by name and wait for its reply.',
    inputSchema: A2aSendInput,
    requires: (input) => [{ kind: 'agent_message', pattern: input.agent }],
    async execute(input, context) {
      const card = await registry.card(input.agent, { signal: context.signal });
      if (card === undefined) {
        const known = registry.list().map((agent) => agent.name);
        return { text: `no external A2A agent named "${input.agent}"; configured: ${known.length === 0 ? 'none' : known.join(', ')}`, isError: true };
      }
      const result = await sendA2aMessage(card, input.message, { signal: context.signal });
      const failed = result.state === 'failed' || result.state === 'rejected' || result.state === 'canceled';
      return {
        text: result.text !== '' ? result.text : `(the task ended ${result.state} without text)`,
        structured: { agent: input.agent, task_id: result.taskId, state: result.state },
        ...(failed ? { isError: true } : {}),
      };
    },
  };
}

/** `a2a_send {agent, message}` on the daemon's registry: needs `agent_message` for the agent's name. */
export const a2aSendTool = createA2aSendTool(externalAgents);
