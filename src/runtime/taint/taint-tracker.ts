import { basename, isAbsolute, relative, resolve } from 'node:path';
import type { ToolAgent } from '../../contracts/index.ts';
import { type CallArgument, callArguments, hostsIn, normaliseText, type TaintSource, UntrustedText } from './untrusted-text.ts';

/** What a sink does with a call carrying untrusted text: ask a human, refuse it, or let it run. */
export type TaintAction = 'approve' | 'refuse' | 'off';

/** The tool calls taint tracking guards. `http_request` only when not a GET and to another host than the text came from. */
export type TaintSink = 'shell_exec' | 'file_write' | 'http_request' | 'agent_spawn' | 'agent_message';

/** The sinks, in the order the docs list them. */
export const TAINT_SINKS: readonly TaintSink[] = ['shell_exec', 'file_write', 'http_request', 'agent_spawn', 'agent_message'];

/**
 * Each sink's action when `[taint]` names none (docs/decisions/0048): a human approves a command,
 * a spawn, a message to another agent and a write to another host; a file write is let through
 * (saving what was read is what agents are for) but the file keeps the taint.
 */
export const DEFAULT_TAINT_ACTIONS: Readonly<Record<TaintSink, TaintAction>> = {
  shell_exec: 'approve',
  file_write: 'off',
  http_request: 'approve',
  agent_spawn: 'approve',
  agent_message: 'approve',
};

/** `[taint]` of config.toml. */
export interface TaintSettings {
  /** Every sink's action, over the defaults; `sinks` wins for the sinks it names. */
  policy?: TaintAction | undefined;
  sinks?: Partial<Record<TaintSink, TaintAction | undefined>> | undefined;
  /** Callers other than the owner whose messages are trusted: an API key's name, or `<channel>:<platform user id>`. */
  trusted?: readonly string[] | undefined;
}

/** A tool call carrying untrusted text into a sink whose action is not `off`. */
export interface TaintFinding {
  sink: TaintSink;
  action: 'approve' | 'refuse';
  source: TaintSource;
  /** What of the text the call carries, normalised (a run of it, a host, a file's path). */
  excerpt: string;
}

/** A tool as taint tracking tells sources: its name, and the MCP server it belongs to. */
export interface TaintTool {
  name: string;
  mcpServer?: string | undefined;
}

/** How many files' writers the tracker remembers; the oldest are forgotten first. */
export const MAX_REMEMBERED_FILES = 10_000;

/** How many agents' replies carrying untrusted text wait for the call that asked for them; the oldest are forgotten first. */
const MAX_WAITING_REPLIES = 1_000;

/** The untrusted texts of one turn, and the files it wrote with them. */
interface TurnLedger {
  texts: UntrustedText[];
  /** Normalised names (path as given, absolute path, base name) of files written with untrusted text. */
  files: Map<string, TaintSource>;
}

/** Who last wrote a file, and with which untrusted text when it carried one. */
interface FileWrite {
  agentId: string;
  agentName: string;
  source?: TaintSource;
}

const AGENT_MESSAGE_TOOLS = new Set(['agent_message', 'a2a_send']);

/**
 * Taint tracking (spec/05's kernel-level protections): labels what comes from outside the agent
 * as untrusted within its turn, and finds the tool calls that carry it into a sink. One per
 * daemon; a turn is known by the `ToolAgent` its calls are made as (made anew for each turn), so
 * its texts go when the turn does. The tool runner calls {@link observe} after each call and
 * {@link check} before each; the message flow calls {@link label} for a message from outside.
 */
export class TaintTracker {
  readonly #actions: Readonly<Record<TaintSink, TaintAction>>;
  /** `[taint].trusted`: callers besides the owner whose messages are not labelled (see `untrustedSenderOf`). */
  readonly trusted: readonly string[];
  readonly #turns = new WeakMap<ToolAgent, TurnLedger>();
  readonly #files = new Map<string, FileWrite>();
  /** Replies of agents that carry untrusted text, by their text, until the `agent_message` call that asked takes them in. */
  readonly #replies = new Map<string, TaintSource>();

  constructor(settings: TaintSettings = {}) {
    const actions = { ...DEFAULT_TAINT_ACTIONS };
    for (const sink of TAINT_SINKS) actions[sink] = settings.sinks?.[sink] ?? settings.policy ?? DEFAULT_TAINT_ACTIONS[sink];
    this.#actions = actions;
    this.trusted = settings.trusted ?? [];
  }

  /** Whether every sink is off: then nothing is labelled. */
  get off(): boolean {
    return TAINT_SINKS.every((sink) => this.#actions[sink] === 'off');
  }

  /** Labels `text` untrusted for the rest of the turn `agent` is made for. */
  label(agent: ToolAgent, source: TaintSource, text: string): void {
    if (this.off || text.trim() === '') return;
    this.#ledger(agent).texts.push(new UntrustedText(source, text));
  }

  /**
   * The first untrusted text a call of `tool` with `input` carries into a sink whose action is
   * not `off`; undefined when the call is no sink, or carries none.
   */
  check(agent: ToolAgent, tool: TaintTool, input: unknown): TaintFinding | undefined {
    const sink = sinkOf(tool.name, input);
    if (sink === undefined) return undefined;
    const action = this.#actions[sink.sink];
    const ledger = this.#turns.get(agent);
    if (action === 'off' || ledger === undefined) return undefined;
    const found = findCarried(ledger, callArguments(input), sink.host, sink.sink === 'shell_exec');
    return found === undefined ? undefined : { sink: sink.sink, action, ...found };
  }

  /** Takes in what a call returned: a source's result is labelled untrusted, a file write is remembered. */
  observe(agent: ToolAgent, tool: TaintTool, input: unknown, result: { text: string; isError?: boolean }): void {
    if (this.off) return;
    const fields = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
    if (tool.name === 'file_write' && result.isError !== true) {
      this.#wrote(agent, fields);
      return;
    }
    const source =
      tool.name === 'file_read' ? this.#readSource(agent, fields) : tool.name === 'agent_message' ? this.#takeReply(result.text) : sourceOf(tool, fields);
    if (source !== undefined) this.label(agent, source, result.text);
  }

  /**
   * Takes in the reply `agent`'s turn gives another agent: when it carries untrusted text of the
   * turn, the asking agent's `agent_message` call labels it (see {@link observe}).
   */
  replied(agent: ToolAgent, text: string): void {
    const ledger = this.#turns.get(agent);
    if (ledger === undefined || text.trim() === '') return;
    const carried = findCarried(ledger, callArguments(text), undefined);
    if (carried === undefined) return;
    this.#replies.delete(text);
    this.#replies.set(text, {
      tool: 'agent_message',
      origin: `the reply of agent "${agent.name}", carrying text from ${carried.source.tool} (${carried.source.origin})`,
    });
    if (this.#replies.size > MAX_WAITING_REPLIES) this.#replies.delete(this.#replies.keys().next().value as string);
  }

  #takeReply(text: string): TaintSource | undefined {
    const source = this.#replies.get(text);
    this.#replies.delete(text);
    return source;
  }

  #ledger(agent: ToolAgent): TurnLedger {
    let ledger = this.#turns.get(agent);
    if (ledger === undefined) {
      ledger = { texts: [], files: new Map() };
      this.#turns.set(agent, ledger);
    }
    return ledger;
  }

  /** Remembers who wrote the file, and, when its content carries untrusted text, that the file does. */
  #wrote(agent: ToolAgent, fields: Record<string, unknown>): void {
    const path = stringField(fields, 'path');
    if (path === undefined) return;
    const absolute = resolve(agent.workspace, path);
    const ledger = this.#turns.get(agent);
    const carried = ledger === undefined ? undefined : findCarried(ledger, callArguments(fields['content']), undefined);
    const write: FileWrite = { agentId: agent.id, agentName: agent.name, ...(carried === undefined ? {} : { source: carried.source }) };
    this.#files.delete(absolute);
    this.#files.set(absolute, write);
    if (this.#files.size > MAX_REMEMBERED_FILES) this.#files.delete(this.#files.keys().next().value as string);
    if (ledger === undefined || carried === undefined) return;
    const name = basename(absolute);
    for (const named of [path, absolute, ...(name.length >= 4 ? [name] : [])]) ledger.files.set(normaliseText(named), carried.source);
  }

  /** A file read is untrusted when it lies outside the agent's workspace, another agent wrote it, or it was written with untrusted text. */
  #readSource(agent: ToolAgent, fields: Record<string, unknown>): TaintSource | undefined {
    const path = stringField(fields, 'path');
    if (path === undefined) return undefined;
    const absolute = resolve(agent.workspace, path);
    const write = this.#files.get(absolute);
    if (write !== undefined && write.agentId !== agent.id) return { tool: 'file_read', origin: `file ${absolute}, written by agent "${write.agentName}"` };
    if (write?.source !== undefined) return { tool: 'file_read', origin: `file ${absolute}, written with text from ${write.source.origin}` };
    const inside = relative(agent.workspace, absolute);
    if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) return undefined;
    return { tool: 'file_read', origin: `file ${absolute}, outside the agent's workspace` };
  }
}

/** The untrusted text the arguments carry (skipping texts from `sameHost`; `whole`: rule 2 too), with an excerpt. */
function findCarried(
  ledger: TurnLedger,
  callArgs: readonly CallArgument[],
  sameHost: string | undefined,
  whole = false,
): Omit<TaintFinding, 'sink' | 'action'> | undefined {
  for (const argument of callArgs) {
    for (const text of ledger.texts) {
      if (sameHost !== undefined && text.source.host === sameHost) continue;
      const excerpt = text.carriedBy(argument, whole);
      if (excerpt !== undefined) return { source: text.source, excerpt };
    }
    for (const [name, source] of ledger.files) {
      if (sameHost !== undefined && source.host === sameHost) continue;
      if (argument.text.includes(name)) return { source, excerpt: name };
    }
  }
  return undefined;
}

/** The sink a call is, with the host of an HTTP request; undefined for a call that is none (a GET is none). */
function sinkOf(tool: string, input: unknown): { sink: TaintSink; host?: string } | undefined {
  if (AGENT_MESSAGE_TOOLS.has(tool)) return { sink: 'agent_message' };
  if (tool === 'shell_exec' || tool === 'file_write' || tool === 'agent_spawn') return { sink: tool };
  if (tool !== 'http_request') return undefined;
  const fields = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const method = (stringField(fields, 'method') ?? 'GET').toUpperCase();
  if (method === 'GET') return undefined;
  const host = hostOf(stringField(fields, 'url'));
  return host === undefined ? { sink: 'http_request' } : { sink: 'http_request', host };
}

/** Where the result of a source tool comes from; undefined for a tool whose results are the agent's own. */
function sourceOf(tool: TaintTool, fields: Record<string, unknown>): TaintSource | undefined {
  if (tool.mcpServer !== undefined) return { tool: tool.name, origin: `MCP server "${tool.mcpServer}"` };
  switch (tool.name) {
    case 'web_fetch':
    case 'http_request': {
      const url = stringField(fields, 'url') ?? '';
      const host = hostOf(url);
      return { tool: tool.name, origin: url, ...(host === undefined ? {} : { host }) };
    }
    case 'web_search':
      return { tool: tool.name, origin: `web search for "${stringField(fields, 'query') ?? stringField(fields, 'q') ?? ''}"` };
    case 'a2a_send':
      return { tool: tool.name, origin: `A2A agent "${stringField(fields, 'agent') ?? ''}"` };
    default:
      return undefined;
  }
}

function stringField(fields: Record<string, unknown>, key: string): string | undefined {
  const value = fields[key];
  return typeof value === 'string' ? value : undefined;
}

/** The host of a URL, lower case, as `hostsIn` reads it; undefined when it is not one. */
function hostOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const [host] = hostsIn(normaliseText(url));
  return host;
}

/**
 * Why a call is held or refused, for the model, the human asked and the audit log:
 * `shell_exec carries untrusted text from web_fetch (https://example.com/page): "curl …"`.
 */
export function describeTaint(tool: string, finding: TaintFinding): string {
  return `${tool} carries untrusted text from ${finding.source.tool} (${finding.source.origin}): "${finding.excerpt}"`;
}
