import { z } from 'zod';
import type { Principal } from '../../access/index.ts';
import { isLoomError } from '../../errors/index.ts';
import { type AgentView, type Kernel, kernelAs, type RunningTurnView, type ToolPrincipal } from '../../kernel/index.ts';
import { toolJsonSchema } from '../../runtime/index.ts';
import { API, apiClient } from '../../wire/index.ts';
import type { AgentSessionView } from './last-turn-view.ts';

/** The MCP tool an agent is served as: `loom_agent_{name}`, lowercase, anything but `[a-z0-9]` → `_`. */
export function agentToolName(agentName: string): string {
  return `loom_agent_${agentName.toLowerCase().replace(/[^a-z0-9]/g, '_')}`;
}

/**
 * A warning when another of `agents` is served over MCP as the same tool as agent `name` (their
 * names differ only in case, `-` and `_`): the tool calls the one listed first, so MCP clients
 * cannot reach the other.
 */
export function agentToolClash(name: string, agents: readonly { name: string }[]): string[] {
  const tool = agentToolName(name);
  const other = agents.find((agent) => agent.name !== name && agentToolName(agent.name) === tool);
  if (other === undefined) return [];
  return [
    `agent "${name}" is served over MCP as the tool ${tool}, as agent "${other.name}" is: MCP clients reach only the one spawned first; rename one to reach both over MCP`,
  ];
}

/**
 * The conversation of one MCP client session (a 2025-era Streamable HTTP session, a 2024-era SSE
 * stream, a stdio connection): `mcp:<session id>`, a thread within the caller's own conversation,
 * so two client sessions of one key do not share a session of the agent.
 */
export function mcpThread(sessionId: string): string {
  return `mcp:${sessionId}`;
}

/** An agent as the MCP server offers it. */
export interface AgentSummary {
  name: string;
  description: string;
  state: AgentView['state'];
}

/**
 * Where the MCP server finds agents and sends them messages: a kernel in this process, or a
 * running daemon over HTTP. Both apply the same access rules (the kernel decides).
 */
export interface AgentDirectory {
  /** The live agents `principal` may reach. */
  list(principal: Principal): Promise<AgentSummary[]>;
  /**
   * The principal's own session of the agent (the main one for the owner), or that of its
   * `thread` (an MCP client session's, {@link mcpThread}), when `principal` may reach the agent;
   * undefined when there is no such live agent or it is out of the principal's reach (the two are
   * not told apart).
   */
  session(agentName: string, principal: Principal, signal?: AbortSignal, thread?: string): Promise<AgentSessionView | undefined>;
  /** Sends `message` to the agent as `principal`, into its own session or its `thread`'s, and resolves with the reply text. */
  send(agentName: string, message: string, principal: Principal, signal: AbortSignal, thread?: string): Promise<string>;
  /** Calls `listener` whenever agents may have been spawned or killed; returns an unsubscribe. */
  subscribe(listener: () => void): () => void;
  /** Tools besides the agents (the `[mcp_server]` principal's), for `principal`. */
  tools?(principal: Principal): Promise<ServedTool[]>;
  /** Runs one of {@link tools} through the kernel's tool runner; undefined when `name` is none of them. */
  callTool?(name: string, input: unknown, principal: Principal, signal: AbortSignal): Promise<{ text: string; isError: boolean } | undefined>;
}

/**
 * `directory` with each of its calls (an agent's turn, `send`; a tool, `callTool`) run through
 * `around`, which is handed the call's signal and the call itself, to run with the signal it gives.
 */
export function wrapCalls(
  directory: AgentDirectory,
  around: <T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>) => Promise<T>,
): AgentDirectory {
  const callTool = directory.callTool?.bind(directory);
  return {
    ...directory,
    send: (agentName, message, principal, signal, thread) => around(signal, (given) => directory.send(agentName, message, principal, given, thread)),
    ...(callTool === undefined
      ? {}
      : {
          callTool: (name: string, input: unknown, principal: Principal, signal: AbortSignal) =>
            around(signal, (given) => callTool(name, input, principal, given)),
        }),
  };
}

/** A tool served besides the agents, with its input as JSON schema. */
export interface ServedTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * The directory over a kernel in this process; `agent-spawn` and `agent-kill` events signal
 * changes. With `tools` (the `[mcp_server]` principal), it also serves the tools that principal's
 * capabilities grant, run through the kernel's tool runner, to owners only: a viewer may change
 * nothing, and a user key reaches only the agents its patterns name, while the principal's
 * grants (an `agent_message`, a memory or file tool) are not bounded by them.
 */
export function kernelAgentDirectory(kernel: Kernel, tools?: ToolPrincipal): AgentDirectory {
  const served = (principal: Principal): ToolPrincipal | undefined =>
    kernelAs(kernel, principal).may("call the installation's own MCP tools") ? tools : undefined;
  return {
    tools: (principal) => {
      const identity = served(principal);
      if (identity === undefined) return Promise.resolve([]);
      return Promise.resolve(
        kernel.principalTools(identity).map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: toolJsonSchema(tool),
        })),
      );
    },
    callTool: async (name, input, principal, signal) => {
      const identity = served(principal);
      if (identity === undefined || !kernel.principalTools(identity).some((tool) => tool.name === name)) return undefined;
      const result = await kernel.runPrincipalTool(identity, name, input, signal);
      return { text: result.text, isError: result.isError === true };
    },
    list: (principal) =>
      Promise.resolve(
        kernelAs(kernel, principal)
          .list()
          .map((agent) => ({ name: agent.name, description: agent.description, state: agent.state })),
      ),
    async session(agentName, principal, _signal, thread) {
      // By exact name among the live agents the principal reaches (not by id): out of reach is as unknown.
      const caller = kernelAs(kernel, principal);
      const agent = caller.list().find((candidate) => candidate.name === agentName);
      if (agent === undefined) return undefined;
      try {
        const session = await caller.session(agent.name, { thread });
        return { agent: agent.name, session_id: session.id, messages: session.messages, running: (await caller.runningTurn(agent.name, { thread })) ?? null };
      } catch (error) {
        // Killed since it was listed: as unknown as any other.
        if (isLoomError(error) && error.code === 'AGENT_NOT_FOUND') return undefined;
        throw error;
      }
    },
    send: async (agentName, message, principal, signal, thread) => (await kernelAs(kernel, principal).send(agentName, message, { signal, thread })).text,
    subscribe: (listener) =>
      kernel.events.subscribe((event) => {
        if (event.type === 'agent-spawn' || event.type === 'agent-kill') listener();
      }),
  };
}

/** How {@link daemonAgentDirectory} reaches the daemon. */
export interface DaemonDirectoryOptions {
  /** The daemon's base URL (e.g. `http://127.0.0.1:4200`). */
  url: string;
  /** Sent as `Authorization: Bearer …` when set (`LOOM_API_KEY`). */
  apiKey?: string | undefined;
  /** How often the agent list is polled for changes while someone listens (default 2000 ms). */
  pollMs?: number;
  fetch?: typeof fetch;
}

/** `GET /api/agents/{agent}/session` as the daemon answers it; a peer's answer, so checked loosely. */
const DaemonSessionSchema = z.looseObject({
  id: z.string(),
  messages: z.array(z.unknown()),
  running: z
    .looseObject({ run_id: z.string().nullable(), message: z.string(), received_at: z.string(), state: z.enum(['running', 'queued']) })
    .nullable()
    .optional(),
});

/** A refusal of the daemon: its message, and its status (404 and 403 read as an agent out of reach). */
class DaemonRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'DaemonRefusal';
    this.status = status;
  }
}

async function daemonError(response: Response): Promise<Error> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    if (typeof body.error?.message === 'string') return new DaemonRefusal(response.status, body.error.message);
  } catch {
    // not JSON: report the status below
  }
  return new DaemonRefusal(response.status, `the Loom daemon answered ${response.status} ${response.statusText}`);
}

/**
 * The directory over a running daemon's HTTP API (`GET /api/agents`,
 * `POST /api/agents/{name}/messages`). The daemon authenticates the key and applies its
 * principal's rules, so `principal` is not used here. Changes are found by polling the list.
 */
export function daemonAgentDirectory(options: DaemonDirectoryOptions): AgentDirectory {
  const doFetch = options.fetch ?? fetch;
  const auth: Record<string, string> = options.apiKey === undefined || options.apiKey === '' ? {} : { authorization: `Bearer ${options.apiKey}` };
  const api = apiClient({ fetch: (path, init) => doFetch(`${options.url}${path}`, { ...init, headers: { ...auth, ...init.headers } }), error: daemonError });
  const fetchList = async (): Promise<AgentSummary[]> =>
    (await api.call(API.listAgents)).map((agent) => ({ name: agent.name, description: agent.description, state: agent.state }));
  const listeners = new Set<() => void>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastKey: string | undefined;
  const poll = async (): Promise<void> => {
    try {
      const key = (await fetchList()).map((agent) => agent.name).join('\n');
      if (lastKey !== undefined && key !== lastKey) for (const listener of listeners) listener();
      lastKey = key;
    } catch {
      // the daemon may be restarting: try again on the next tick
    }
  };
  return {
    list: () => fetchList(),
    async session(agentName, _principal, signal, thread) {
      // By exact name among the agents the key may reach, as over the kernel (the API takes ids too).
      if (!(await fetchList()).some((agent) => agent.name === agentName)) return undefined;
      let answer: unknown;
      try {
        answer = await api.call(API.session, { params: { agent: agentName }, query: { thread }, ...(signal === undefined ? {} : { signal }) });
      } catch (error) {
        // Unknown (404) and out of the key's reach (403) are one answer, as over the kernel.
        if (error instanceof DaemonRefusal && (error.status === 404 || error.status === 403)) return undefined;
        throw error;
      }
      const parsed = DaemonSessionSchema.safeParse(answer);
      if (!parsed.success)
        throw new Error(
          `the Loom daemon answered GET /api/agents/${agentName}/session with an unexpected body: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
        );
      const running: RunningTurnView | null = parsed.data.running ?? null;
      return { agent: agentName, session_id: parsed.data.id, messages: parsed.data.messages, running };
    },
    send: async (agentName, message, _principal, signal, thread) =>
      (await api.call(API.sendMessage, { params: { agent: agentName }, body: { message, thread }, signal })).text,
    subscribe(listener) {
      listeners.add(listener);
      if (timer === undefined) {
        void poll();
        timer = setInterval(() => void poll(), options.pollMs ?? 2000);
        timer.unref();
      }
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
          lastKey = undefined;
        }
      };
    },
  };
}
