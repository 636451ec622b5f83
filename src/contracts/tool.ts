import type { LogReader } from './log-reader.ts';
import type { z } from 'zod';
import type { Capability } from './capability.ts';
import type { JsonObject, JsonValue } from './json.ts';
import type { Logger } from './logger.ts';

/** The agent a tool call runs for. */
export interface ToolAgent {
  id: string;
  name: string;
  /** The agent's workspace folder, absolute; relative paths in tool input resolve here. */
  workspace: string;
  /**
   * Set for a child agent, whose workspace was pinned to its real path when it was spawned: the
   * free access to the workspace holds only while it still resolves to that path, so a symbolic
   * link put in its path afterwards does not widen it.
   */
  pinnedWorkspace?: boolean;
  /** The capabilities the agent holds, for tools that explain a refusal. */
  capabilities: readonly Capability[];
  /** `[exec_policy]`; every field true when the manifest has none. */
  execPolicy: { allow_shell: boolean; allow_network: boolean; allow_file_write: boolean };
  /** How many agent-to-agent hops led to this call (0 for a call from a user). */
  depth: number;
  /** Ids of the agents whose messages led here, outermost first (empty for a call from a user). */
  chain: readonly string[];
  /**
   * Least privilege for one turn: when set, a call must be granted by these as well as by the
   * agent's own capabilities (a package activity runs with only what its `mcps`, `cmds` and
   * skills name). It can only take away.
   */
  limit?: readonly Capability[];
  /**
   * With `limit`: the MCP servers whose tools the turn may call. A tool of another server is
   * refused even when a name pattern of the limit matches it (`mcp_slack_*` matches the tools of
   * a server named `slack-notifier` too, `mcp_slack_notifier_*`). Unset: no server is singled out.
   */
  limitMcpServers?: readonly string[];
  /**
   * `[emergent].max_nested_calls`: how many tool calls one top-level call may make through its
   * toolbox (compose steps, sandbox bridges), every level counted together. Unset: the runner's
   * default (50).
   */
  maxNestedCalls?: number;
}

/** A reply from another agent, as `agent_message` returns it. */
export interface AgentReply {
  text: string;
  iterations: number;
  costUsd: number;
}

/** A stored memory value with its key and owner scope. */
export interface MemoryEntry {
  scope: string;
  key: string;
  value: JsonValue;
  updatedAt: number;
}

/**
 * The narrow view of the kernel that tools get. Every method acts as the calling agent and
 * checks that agent's capabilities again in the kernel, so a tool cannot widen them.
 */
export interface KernelHandle {
  /** Spawns a child of the calling agent from manifest text; inheritance is enforced. */
  spawnAgent(caller: ToolAgent, manifestText: string): Promise<{ id: string; name: string }>;
  /** Sends a message to another agent and waits for the reply. */
  messageAgent(caller: ToolAgent, target: string, message: string, options: { signal: AbortSignal }): Promise<AgentReply>;
  /** Kills an agent (and its descendants); returns the names killed. */
  killAgent(caller: ToolAgent, target: string): Promise<string[]>;
  /** The live agents. */
  listAgents(caller: ToolAgent): { id: string; name: string; state: string; description: string; tags: string[] }[];
  /** Stores a value under `scope.key`; `self` is the caller's own scope. */
  memoryPut(caller: ToolAgent, key: string, value: JsonValue): Promise<void>;
  /**
   * One model call on the caller's own model (its `[model]` within its `llm_query` grants),
   * metered and counted against its quota. Returns the text.
   */
  generateText(caller: ToolAgent, prompt: string, options: { signal: AbortSignal }): Promise<string>;
  /** Reads by exact key, by prefix, or by a text search over keys and values. */
  memoryFind(caller: ToolAgent, query: { key: string } | { prefix: string } | { query: string }): Promise<MemoryEntry[]>;
}

/** What a tool call produced. `isError` results are shown to the model as failures it can recover from. */
export interface ToolResult {
  text: string;
  /** Structured output, when the tool has any. */
  structured?: JsonObject;
  isError?: boolean;
}

/**
 * Other tools, called as the same agent through the tool runner (every check applies again):
 * how a forged tool's steps and sandbox bridges act.
 */
export interface ToolBox {
  /**
   * Runs a call as part of the call that holds this toolbox: under that call's signal (its time
   * limit and cancellation), seen by the turn's loop guard, and counted against the top-level
   * call's budget of nested calls. Returns its result; a refusal is an error result, as the model
   * would see it, and so is a call asked for once the holding call is over (it is not started).
   * With `composeStep`, the call is a compose step: the tool it calls is one compose level deeper.
   */
  invoke(toolName: string, input: unknown, options?: { composeStep?: boolean }): Promise<ToolResult>;
  /** Whether a tool exists, and whether the agent may call it now. */
  status(toolName: string): 'held' | 'not-held' | 'unknown';
  /**
   * How many compose steps the call that holds this toolbox is nested in: 0 for a call the model
   * (or a door) made, 1 for a tool a compose step called, and so on. Unset: 0.
   */
  readonly composeDepth?: number;
}

/** Everything a tool's `execute` may use. */
export interface ToolContext {
  /** Aborts on timeout or cancellation; pass it on to fetch, child processes and sleeps. */
  signal: AbortSignal;
  agent: ToolAgent;
  kernel: KernelHandle;
  logger: Logger;
  /** The agent's `[tools.<name>]` settings. */
  settings: Readonly<Record<string, JsonValue>>;
  /** The environment the daemon was given (API keys for tools such as web_search). */
  env: Readonly<Record<string, string | undefined>>;
  /** The daemon's recent log records (the event-log tools read them), when it keeps them. */
  logs?: LogReader | undefined;
  /** Other tools, as this agent (see {@link ToolBox}). */
  toolbox?: ToolBox | undefined;
  /**
   * Asks a person a question on the agent's behalf (an MCP server's elicitation): shown where
   * approvals are (CLI, API, dashboard, the chat), answered with the fields `schema` asks for,
   * or declined; a turn cancelled meanwhile, the question's `signal` aborted, or the call ended
   * is `cancel`; Loom stopping meanwhile is `decline`. Absent where nobody can be asked.
   */
  askPerson?: ((question: PersonQuestion) => Promise<PersonAnswer>) | undefined;
}

/** A question for a person: what is asked, and the JSON Schema of the object that answers it. */
export interface PersonQuestion {
  /** Who asks, e.g. `mcp_github` (shown as the request's tool). */
  from: string;
  message: string;
  /** A flat object schema (strings, numbers, booleans, enums), as MCP's form elicitation sends. */
  schema: JsonObject;
  /**
   * Aborts when the asker takes the question back (an MCP server cancels its request, or it timed
   * out): the pending question is then closed (`expired` by `withdrawn`) and the answer is
   * `cancel`. The question also ends with the tool call that asked it.
   */
  signal?: AbortSignal | undefined;
}

/** A person's answer: the fields, or why there are none. */
export type PersonAnswer = { action: 'accept'; content: JsonObject } | { action: 'decline' | 'cancel'; reason: string };

/**
 * A tool an agent can call. The tool runner, not the tool, checks capabilities, applies the
 * timeout, truncates output and records refusals: a tool only declares what a call needs.
 */
export interface Tool<Input = unknown> {
  readonly name: string;
  readonly description: string;
  /** The MCP server the tool comes from, if any: the agent's `mcp_servers` allowlist applies to it. */
  readonly mcpServer?: string;
  /**
   * The `tool_invoke` grant that admits this tool, when it is not its own name: an agent's own
   * forged tools are admitted by its `forge_tool` grant.
   */
  readonly grantedBy?: string;
  readonly inputSchema: z.ZodType<Input>;
  /**
   * The tool's input as JSON Schema, when it was written that way (an MCP server's tool, a forged
   * tool): offered to the model and MCP clients unchanged and checked by the runner as written,
   * in the dialect it declares (2020-12 by default). `inputSchema` then only types the input.
   */
  readonly jsonSchema?: JsonObject;
  /**
   * The capabilities this call needs beyond `tool_invoke(name)`, computed from its input: a
   * path, a host, a command. May throw a LoomError to refuse input it cannot judge.
   */
  requires(input: Input, context: ToolContext): readonly Capability[] | Promise<readonly Capability[]>;
  execute(input: Input, context: ToolContext): Promise<ToolResult>;
  /**
   * Whether running a call again has the same effect as running it once (decision 0045), for
   * every input or for this one: a call that was running when its daemon stopped is run again
   * when its turn resumes only when this says so; otherwise the model is told that its outcome is
   * unknown. Absent means not idempotent.
   */
  readonly idempotent?: boolean | ((input: Input) => boolean);
}
