import { describeCapability, formatCommandLine, isGranted, MANIFEST_KEY_BY_KIND, splitShellWords } from '../capabilities/index.ts';
import type {
  Capability,
  Clock,
  JsonObject,
  JsonValue,
  KernelHandle,
  Logger,
  LogReader,
  PersonAnswer,
  PersonQuestion,
  Tool,
  ToolAgent,
  ToolBox,
  ToolContext,
  ToolResult,
} from '../contracts/index.ts';
import { isLoomError } from '../errors/index.ts';
import { checkToolInput } from './tool-schema.ts';
import { DEFAULT_TOOL_TIMEOUT_MS } from './constants.ts';
import type { LoopGuard } from './loop-guard.ts';
import type { AgentEventSink } from './agent-event.ts';
import { truncateToolOutput } from './truncate-tool-output.ts';
import { linkAbort } from './link-abort.ts';
// The spans alone, not the telemetry index: that loads the metrics and exporter libraries, which a daemon without telemetry never needs.
import { withToolSpan } from '../telemetry/spans.ts';
import { describeTaint, type TaintFinding, type TaintTracker } from './taint/taint-tracker.ts';

/** A refused or failed tool call, as the audit log records it. */
export interface ToolAuditEntry {
  agentId: string;
  agentName: string;
  tool: string;
  outcome: 'denied' | 'invalid' | 'timeout' | 'blocked';
  reason: string;
}

/** A tool call that ran (its result may be an error the tool returned), as the audit log records it. */
export interface ToolFinishEntry {
  agentId: string;
  agentName: string;
  tool: string;
  isError: boolean;
  durationMs: number;
}

/** A call found carrying untrusted text into a sink (taint tracking), as the audit log records it. */
export interface TaintAuditEntry extends TaintFinding {
  agentId: string;
  agentName: string;
  tool: string;
}

/** What the tool runner is built from. */
export interface ToolRunnerOptions {
  /** The tools, or a function giving the current ones (MCP servers' tools come and go). */
  tools: readonly Tool<never>[] | (() => readonly Tool<never>[]);
  kernel: KernelHandle;
  clock: Clock;
  logger: Logger;
  env: Readonly<Record<string, string | undefined>>;
  /** The daemon's recent log records, for the event-log tools. */
  logs?: LogReader | undefined;
  /** Records a refusal or failure; must not throw. */
  audit: (entry: ToolAuditEntry) => Promise<void>;
  /** Records a call that ran to its end (not one that timed out: `audit` has it); must not throw. */
  finished?: (entry: ToolFinishEntry) => Promise<void>;
  /**
   * The capabilities an agent holds now. Checked on every call, so a grant revoked mid-turn (the
   * agent was killed) stops its next call. Defaults to the agent's capabilities as given.
   */
  grants?: (agent: ToolAgent) => readonly Capability[];
  /** Where calls of tools in `approvalRequiredFor` wait for a human; without it they are refused. */
  approvals?: ApprovalGate;
  /** Tools of one agent beside the shared ones (its forged tools and `forge_tool`); the shared ones win a name clash, then the first of a name. */
  agentTools?: (agent: ToolAgent) => readonly Tool<never>[];
  /** Taint tracking: labels what sources return, and finds calls carrying it into a sink. */
  taint?: TaintTracker;
  /** Records a call `taint` found carrying untrusted text, before it is refused or put to a human; must not throw. */
  tainted?: (entry: TaintAuditEntry) => Promise<void>;
}

/** How deep tools may call tools through their toolbox (a compose step calling a forged tool calling…). */
export const MAX_TOOL_NESTING = 4;

/**
 * How many tool calls one top-level call may make through its toolbox, every level counted
 * together, when the agent sets no `[emergent].max_nested_calls` (the manifest's default too).
 */
export const DEFAULT_MAX_NESTED_CALLS = 50;

/**
 * The nested calls of one top-level call, shared by every level under it: its budget, and the
 * loop guard's word on them, which the top-level call's outcome passes on to the loop.
 */
export interface NestedCalls {
  /** The top-level call's tool, named in a refusal. */
  readonly root: string;
  /** `[emergent].max_nested_calls`, or DEFAULT_MAX_NESTED_CALLS. */
  readonly limit: number;
  /** The calls made so far (the ones the budget refused not counted). */
  made: number;
  /** Whether the budget's refusal has been audited: only the first is, so a tool that keeps asking does not fill the audit log. */
  refusalAudited: boolean;
  /** The loop guard's first warning on a nested call. */
  hint?: string;
  /** Set when the loop guard's circuit breaker tripped on a nested call: the loop must end. */
  breakLoop?: string;
}

/**
 * Asks a human to approve a tool call: the request is opened (and shown) first, then decided.
 * The decision rejects when the turn is cancelled.
 */
export interface ApprovalGate {
  /**
   * With `answerSchema`, the request is a question: approving it means answering with an object
   * that schema accepts. When `withdrawn` aborts (and `signal` has not), the request is closed and
   * the decision is a refusal.
   */
  open(
    agent: { id: string; name: string },
    tool: string,
    input: JsonValue,
    signal: AbortSignal,
    options?: { answerSchema?: JsonObject; withdrawn?: AbortSignal; onId?: (id: string) => Promise<void> },
  ): Promise<{ id: string; expiresAt: number; decision: Promise<ApprovalDecision> }>;
  /**
   * Waits again on request `id`, which a resumed turn's call waited for when its daemon stopped
   * (decision 0045); undefined when it cannot be waited on (gone, closed): the call asks anew.
   */
  resume?(
    agent: { id: string; name: string },
    id: string,
    signal: AbortSignal,
  ): Promise<{ id: string; expiresAt: number; decision: Promise<ApprovalDecision> } | undefined>;
}

/** A person's decision on a request; `answer` answers a question. */
interface ApprovalDecision {
  approved: boolean;
  by: string;
  reason: string | null;
  answer?: JsonObject | undefined;
}

/**
 * A person asked through the approvals (an MCP server's elicitation during a call): the question
 * is a request like a tool call's, shown to the turn's watchers the same way, and approving it
 * means answering it.
 */
function askPersonFor(
  approvals: ApprovalGate,
  agent: ToolAgent,
  toolCallId: string,
  signal: AbortSignal,
  emit: AgentEventSink | undefined,
): (question: PersonQuestion) => Promise<PersonAnswer> {
  return async (question) => {
    const input: JsonObject = { message: question.message, requestedSchema: question.schema };
    const withdrawn = question.signal;
    try {
      const decision = await askApproval(
        approvals,
        { agent, toolCallId, toolName: question.from, input, signal, emit },
        { answerSchema: question.schema, ...(withdrawn === undefined ? {} : { withdrawn }) },
      );
      if (decision.approved && decision.answer !== undefined) return { action: 'accept', content: decision.answer };
      // Taken back by its asker (or its call ended): nobody declined it. The decision says so (by the
      // approval service's EXPIRED_BY_WITHDRAW), not the signal: a shutdown's decline may come as it aborts.
      if (decision.by === 'withdrawn') return { action: 'cancel', reason: decision.reason ?? 'the question was withdrawn' };
      return { action: 'decline', reason: decision.by === 'timeout' ? (decision.reason ?? 'nobody answered in time') : `declined${byWhom(decision)}` };
    } catch (error) {
      if (signal.aborted) return { action: 'cancel', reason: 'the turn was cancelled' };
      throw error;
    }
  };
}

/**
 * A request put to a person: opened (or, for a resumed call, the one it waited for before its
 * daemon stopped: `resumeId`), shown to the turn's watchers (`approval-request`), decided.
 */
async function askApproval(
  approvals: ApprovalGate,
  request: {
    agent: ToolAgent;
    toolCallId: string;
    toolName: string;
    input: JsonValue;
    signal: AbortSignal;
    emit: AgentEventSink | undefined;
    reason?: string | undefined;
    resumeId?: string | undefined;
  },
  options?: { answerSchema?: JsonObject; withdrawn?: AbortSignal; onId?: (id: string) => Promise<void> },
): Promise<ApprovalDecision> {
  const resumed = request.resumeId === undefined ? undefined : await approvals.resume?.(request.agent, request.resumeId, request.signal);
  const opened = resumed ?? (await approvals.open(request.agent, request.toolName, request.input, request.signal, options));
  const { reason } = request;
  request.emit?.({
    type: 'approval-request',
    approvalId: opened.id,
    toolCallId: request.toolCallId,
    toolName: request.toolName,
    input: request.input,
    expiresAt: new Date(opened.expiresAt).toISOString(),
    ...(reason === undefined ? {} : { reason }),
  });
  return opened.decision;
}

/** ` by <who>`, and their reason when they gave one. */
function byWhom(decision: ApprovalDecision): string {
  return ` by ${decision.by}${decision.reason === null ? '' : `: ${decision.reason}`}`;
}

/** The manifest's tool lists: an empty allowlist allows every granted tool; the blocklist removes after. */
export interface ToolFilter {
  allowlist: readonly string[];
  blocklist: readonly string[];
  /** The manifest's `mcp_servers`: the MCP servers whose tools the agent may use (empty = all). */
  mcpServers?: readonly string[];
}

/** One call the model asked for. */
export interface ToolCallRequest {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** The settings a call runs under: the agent's `[tools.*]` tables and the run's guard. */
export interface ToolCallOptions {
  agent: ToolAgent;
  /** The agent's tool lists; a tool they hide is refused even when the model names it. */
  filter: ToolFilter;
  /** `[autonomous].approval_required_for`: these tools run only once a human approves the call. */
  approvalRequiredFor?: readonly string[];
  /** Receives the `approval-request` event of a call that waits for a human. */
  emit?: AgentEventSink;
  settings: Readonly<Record<string, Readonly<Record<string, JsonValue>>>>;
  /** The turn's signal; for a call made through a toolbox, the signal of the call that holds it. */
  signal: AbortSignal;
  loopGuard?: LoopGuard;
  /** How many tools this call is nested in (0 for a model's call); see `MAX_TOOL_NESTING`. */
  nesting?: number;
  /** Set for a call made through a toolbox: the nested calls of its top-level call. */
  nestedCalls?: NestedCalls;
  /** How many compose steps this call is nested in (see `ToolBox.composeDepth`); 0 when unset. */
  composeDepth?: number;
  /**
   * Awaited once the call has passed every gate (an approval included), right before the tool
   * runs: the turn's journal records its start (decision 0045). Not passed on to nested calls.
   */
  onStart?: (tool: Tool<never>) => Promise<void>;
  /**
   * Awaited with the id of the request the call is about to wait for, before anyone is asked:
   * the turn's journal records it, so that the turn resumes on that request (decision 0045).
   * Not passed on to nested calls.
   */
  onApproval?: (approvalId: string) => Promise<void>;
  /** A resumed turn's call: the request it waited for when its daemon stopped, waited on again instead of asking anew. */
  resumeApproval?: string;
  /**
   * Set by a turn that journals its steps: a call that ran gives its audit record in
   * `ToolCallOutcome.finished` instead of having it recorded apart, so that it commits with the
   * call's result in the journal.
   */
  holdFinish?: boolean;
}

/** The outcome of a call: the result the model sees, a hint to append, or the end of the loop. */
export interface ToolCallOutcome {
  result: ToolResult;
  /** A loop-guard warning to show the model after the results. */
  hint?: string;
  /** Set when the loop guard's circuit breaker tripped: the loop must end. */
  breakLoop?: string;
  /**
   * How a call whose result is an error ended when the tool did not give that result itself:
   * `refused` by a gate of the runner before it ran (unknown tool, grant, tool lists, input, loop
   * guard, exec policy, approval), out of its time (`timeout`), or the tool `threw` `error`.
   */
  failure?: ToolCallFailure;
  /** The audit record of a call that ran, when `ToolCallOptions.holdFinish` kept it for the caller to record. */
  finished?: ToolFinishEntry;
}

/** See `ToolCallOutcome.failure`. */
export type ToolCallFailure = { kind: 'refused' } | { kind: 'timeout' } | { kind: 'threw'; error: unknown };

const REFUSED: ToolCallFailure = { kind: 'refused' };
const TIMED_OUT: ToolCallFailure = { kind: 'timeout' };

/** Runs tool calls for agents: the one gate every tool call passes. */
export interface ToolRunner {
  /** The tools an agent may call (and so the only ones its model is shown). */
  toolsFor(agent: ToolAgent, filter: ToolFilter): Tool<never>[];
  /**
   * Other tools as the agent of `options`, one level deeper (`options.nesting` + 1), under
   * `options.signal`, seen by `options.loopGuard`, and within the budget of `options.nestedCalls`
   * (a new one, of the agent's `maxNestedCalls`, when unset): what a tool's `context.toolbox` is,
   * and how a door acts as an agent outside a turn.
   */
  toolbox(options: ToolCallOptions, callId: string, caller?: string): ToolBox;
  run(call: ToolCallRequest, options: ToolCallOptions): Promise<ToolCallOutcome>;
}

/**
 * `[exec_policy]` switches, by the tool that acts and by the capability a call needs: a
 * workspace file needs no file_write grant, yet `allow_file_write = false` still forbids it.
 */
const EXEC_POLICY_BY_TOOL: Readonly<Record<string, keyof ToolAgent['execPolicy']>> = {
  file_write: 'allow_file_write',
  shell_exec: 'allow_shell',
  web_fetch: 'allow_network',
  http_request: 'allow_network',
  web_search: 'allow_network',
};

const EXEC_POLICY_BY_KIND: Partial<Record<Capability['kind'], keyof ToolAgent['execPolicy']>> = {
  shell_exec: 'allow_shell',
  net_connect: 'allow_network',
  file_write: 'allow_file_write',
};

/** A grant that would allow `capability`, as advice in a refusal. */
function suggestGrant(capability: Capability): string {
  if (!('pattern' in capability)) return `set ${describeCapability(capability)}`;
  const key = `[capabilities].${MANIFEST_KEY_BY_KIND[capability.kind]}`;
  const value = capability.pattern;
  const broader =
    capability.kind === 'shell_exec'
      ? anyArgumentsOf(value)
      : (capability.kind === 'file_read' || capability.kind === 'file_write') && value.lastIndexOf('/') > 0
        ? `"${value.slice(0, value.lastIndexOf('/'))}/*"`
        : undefined;
  return `add ${JSON.stringify(value)}${broader === undefined ? '' : ` or ${broader}`} to ${key}`;
}

/** The grant allowing a command's program with any arguments (`"git **"`), when it has arguments. */
function anyArgumentsOf(commandLine: string): string | undefined {
  const words = splitShellWords(commandLine, 'command').words;
  const program = words?.[0];
  return program === undefined || words === undefined || words.length < 2 ? undefined : JSON.stringify(`${formatCommandLine([program.text])} **`);
}

/** Whether `capability` is granted to the agent and, for a turn limited to less, by the limit too. */
function allows(granted: readonly Capability[], agent: ToolAgent, capability: Capability): boolean {
  return isGranted(granted, capability) && (agent.limit === undefined || isGranted(agent.limit, capability));
}

/** Whether the tool is granted and left in by the agent's allowlist and blocklist. */
function permits(granted: readonly Capability[], agent: ToolAgent, tool: Tool<never>, filter: ToolFilter): boolean {
  const { name, mcpServer } = tool;
  const servers = filter.mcpServers ?? [];
  return (
    allows(granted, agent, { kind: 'tool_invoke', pattern: tool.grantedBy ?? name }) &&
    (filter.allowlist.length === 0 || filter.allowlist.includes(name)) &&
    !filter.blocklist.includes(name) &&
    // The agent's `mcp_servers`: empty names every server. A step's servers: empty names none.
    (mcpServer === undefined || servers.length === 0 || servers.includes(mcpServer)) &&
    !outsideStepServers(agent, tool)
  );
}

/** Whether `tool` is a tool of an MCP server the step `agent` runs in does not name. */
function outsideStepServers(agent: ToolAgent, tool: Tool<never>): boolean {
  return tool.mcpServer !== undefined && agent.limitMcpServers !== undefined && !agent.limitMcpServers.includes(tool.mcpServer);
}

function errorResult(text: string): ToolResult {
  return { text, isError: true };
}

/** Why a call's signal aborted, as words after "its call": `timed out after 3 s`, `was cancelled`, `ended`. */
function endedBecause(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason === CALL_ENDED) return 'had ended';
  if (reason instanceof Error && TIME_LIMITS.has(reason)) return reason.message;
  return 'was cancelled';
}

/** The budget of a top-level call's nested calls: the agent's `maxNestedCalls`, or DEFAULT_MAX_NESTED_CALLS. */
function startNestedCalls(agent: ToolAgent, root: string): NestedCalls {
  return { root, limit: agent.maxNestedCalls ?? DEFAULT_MAX_NESTED_CALLS, made: 0, refusalAudited: false };
}

/** Why a tool call's own signal aborts once the call is over (nothing is listening by then). */
const CALL_ENDED = new Error('the tool call ended');

/** The reasons calls' signals were aborted with when their time limits passed. */
const TIME_LIMITS = new WeakSet<Error>();

/**
 * Builds the tool runner. For each call, in order: the tool exists; the agent holds
 * `tool_invoke` for it; the input validates; the loop guard allows it; every capability the
 * input needs is granted and allowed by `[exec_policy]`; a call carrying untrusted text into a sink
 * is refused or put to a human (`options.taint`); then it runs under a timeout (60 s, or
 * `[tools.<name>].timeout_seconds`) through an AbortSignal, and its output is capped at 50,000
 * characters. Every failure becomes an error result the model can read; refusals are audited.
 * The calls a tool makes through its toolbox pass the same gates as part of its call: under its
 * signal, seen by the loop guard, and within the top-level call's budget of nested calls.
 */
export function createToolRunner(options: ToolRunnerOptions): ToolRunner {
  const toolList = options.tools;
  const shared = (): readonly Tool<never>[] => (typeof toolList === 'function' ? toolList() : toolList);
  const current = (agent: ToolAgent): readonly Tool<never>[] => {
    const own = options.agentTools?.(agent) ?? [];
    if (own.length === 0) return shared();
    const tools = [...shared()];
    const names = new Set(tools.map((tool) => tool.name));
    // One tool per name, the first, so the tool a model is shown is the one its call runs.
    for (const tool of own) {
      if (names.has(tool.name)) continue;
      names.add(tool.name);
      tools.push(tool);
    }
    return tools;
  };
  // The tool `current` would list under `name`, without building the list: on every call.
  const find = (agent: ToolAgent, name: string): Tool<never> | undefined =>
    shared().find((tool) => tool.name === name) ?? options.agentTools?.(agent).find((tool) => tool.name === name);
  const grantsOf = options.grants ?? ((agent: ToolAgent) => agent.capabilities);

  const refuse = async (agent: ToolAgent, tool: string, outcome: ToolAuditEntry['outcome'], reason: string): Promise<ToolCallOutcome> => {
    await options.audit({ agentId: agent.id, agentName: agent.name, tool, outcome, reason });
    return { result: errorResult(reason), failure: REFUSED };
  };

  /**
   * Runs the call under its time limit; `timedOut` when the limit ended it. The tool gets a
   * signal of its own, aborted when the turn's is, when the limit is reached, or once the call is
   * over: one controller linked to the turn's signal (`linkAbort`), rather than `AbortSignal.any`,
   * which, when the call ended, dispatched the abort twice (~9 against ~4 µs a call in a loop).
   */
  async function execute(
    tool: Tool<never>,
    input: never,
    context: ToolContext,
    timeoutMs: number,
    toolboxFor: (signal: AbortSignal) => ToolBox,
  ): Promise<{ result: ToolResult; timedOut?: true }> {
    const turn = context.signal;
    const call = new AbortController();
    const signal = call.signal;
    const unlink = linkAbort(turn, call);
    let timedOut = false;
    // The timeout runs on the injected clock, so tests can trip it without waiting.
    const timeout = options.clock.sleep(timeoutMs, { signal }).then(
      () => {
        timedOut = true;
        const reason = new Error(`timed out after ${timeoutMs / 1000} s`);
        TIME_LIMITS.add(reason);
        call.abort(reason);
      },
      () => undefined,
    );
    // A question the tool asks ends with the call: its time limit, or the call returning without waiting for it.
    const ask = context.askPerson;
    const askPerson =
      ask === undefined
        ? undefined
        : (question: PersonQuestion): Promise<PersonAnswer> =>
            ask({ ...question, signal: question.signal === undefined ? signal : AbortSignal.any([question.signal, signal]) });
    try {
      // The tools it calls are part of this call: its time limit and cancellation stop them too.
      const result = await Promise.race([tool.execute(input, { ...context, signal, askPerson, toolbox: toolboxFor(signal) }), timeout.then(() => undefined)]);
      // A tool may answer its abort at once; the call still timed out or was cancelled.
      if (timedOut) return { result: errorResult(`tool "${tool.name}" timed out after ${timeoutMs / 1000} s`), timedOut };
      if (turn.aborted || result === undefined) return { result: errorResult(`tool "${tool.name}" was cancelled`) };
      return { result };
    } finally {
      unlink();
      // Ends the timeout's sleep; one reason for every call, rather than a new AbortError each.
      call.abort(CALL_ENDED);
    }
  }

  const runner: ToolRunner = {
    toolsFor(agent, filter) {
      const granted = grantsOf(agent);
      return current(agent).filter((tool) => permits(granted, agent, tool, filter));
    },

    toolbox(callOptions, callId, caller = 'a tool') {
      const { agent, filter, signal } = callOptions;
      const nesting = callOptions.nesting ?? 0;
      const composeDepth = callOptions.composeDepth ?? 0;
      const nestedCalls = callOptions.nestedCalls ?? startNestedCalls(agent, caller);
      return {
        composeDepth,
        async invoke(toolName, input, invokeOptions) {
          // Part of the holding call: once it is over (out of time, cancelled, returned) nothing more starts.
          if (signal.aborted) return errorResult(`${caller} did not start ${toolName}: its call ${endedBecause(signal)}`);
          if (nesting + 1 > MAX_TOOL_NESTING) {
            return refuse(agent, toolName, 'denied', `${caller} may not call ${toolName}: tools may call tools only ${MAX_TOOL_NESTING} levels deep`).then(
              (outcome) => outcome.result,
            );
          }
          if (nestedCalls.made >= nestedCalls.limit) {
            const reason =
              `${caller} may not call ${toolName}: the call of ${nestedCalls.root} has made ${nestedCalls.limit} nested tool calls, ` +
              `all it may make ([emergent].max_nested_calls = ${nestedCalls.limit}); have the tool call fewer tools, or raise [emergent].max_nested_calls`;
            if (nestedCalls.refusalAudited) return errorResult(reason);
            nestedCalls.refusalAudited = true;
            return (await refuse(agent, toolName, 'denied', reason)).result;
          }
          nestedCalls.made += 1;
          const { onStart: _onStart, holdFinish: _holdFinish, onApproval: _onApproval, resumeApproval: _resumeApproval, ...outer } = callOptions;
          const inner: ToolCallOptions = {
            ...outer,
            nesting: nesting + 1,
            nestedCalls,
            composeDepth: invokeOptions?.composeStep === true ? composeDepth + 1 : composeDepth,
          };
          let outcome: ToolCallOutcome;
          try {
            outcome = await runner.run({ toolCallId: `${callId}/${toolName}`, toolName, input }, inner);
          } catch (error) {
            // The runner throws for a call whose signal aborted before it ran: to the holding tool, an error result.
            if (signal.aborted) return errorResult(`${caller} did not start ${toolName}: its call ${endedBecause(signal)}`);
            throw error;
          }
          // The loop guard's word on a nested call reaches the loop through the top-level call.
          if (outcome.hint !== undefined) nestedCalls.hint ??= outcome.hint;
          if (outcome.breakLoop !== undefined) nestedCalls.breakLoop ??= outcome.breakLoop;
          return outcome.result;
        },
        status(toolName) {
          const found = find(agent, toolName);
          if (found === undefined) return 'unknown';
          return permits(grantsOf(agent), agent, found, filter) ? 'held' : 'not-held';
        },
      };
    },

    async run(call, callOptions) {
      const { agent, filter, settings, signal, loopGuard, approvalRequiredFor, emit } = callOptions;
      const tool = find(agent, call.toolName);
      if (tool === undefined) {
        return { result: errorResult(`unknown tool "${call.toolName}"; the tools you can call are listed in this request`), failure: REFUSED };
      }
      const granted = grantsOf(agent);
      if (!permits(granted, agent, tool, filter)) {
        const hidden = isGranted(granted, { kind: 'tool_invoke', pattern: tool.grantedBy ?? tool.name });
        if (hidden && outsideStepServers(agent, tool)) {
          const named = (agent.limitMcpServers ?? []).map((server) => `"${server}"`).join(', ') || 'none';
          return refuse(
            agent,
            tool.name,
            'denied',
            `agent "${agent.name}" may not call ${tool.name} in this step: it is a tool of MCP server "${tool.mcpServer ?? ''}", and the step uses only the servers it names (${named})`,
          );
        }
        if (hidden && agent.limit !== undefined && tool.grantedBy === undefined && !isGranted(agent.limit, { kind: 'tool_invoke', pattern: tool.name })) {
          return refuse(agent, tool.name, 'denied', `agent "${agent.name}" may not call ${tool.name} in this step: the step is limited to the tools it names`);
        }
        return refuse(
          agent,
          tool.name,
          'denied',
          hidden
            ? `agent "${agent.name}" may not call ${tool.name}: its tool_allowlist, tool_blocklist or mcp_servers leaves it out`
            : `agent "${agent.name}" may not call ${tool.name}: ${suggestGrant({ kind: 'tool_invoke', pattern: tool.grantedBy ?? tool.name })}`,
        );
      }
      const parsed = checkToolInput(tool, call.input);
      if (!parsed.ok) return refuse(agent, tool.name, 'invalid', `invalid input for ${tool.name}: ${parsed.problems}`);
      const verdict = loopGuard?.check(tool.name, call.input) ?? { action: 'allow' };
      if (verdict.action === 'break') return { result: errorResult(verdict.message), breakLoop: verdict.message, failure: REFUSED };
      if (verdict.action === 'block') return refuse(agent, tool.name, 'blocked', verdict.message);

      const toolPolicy = EXEC_POLICY_BY_TOOL[tool.name];
      if (toolPolicy !== undefined && !agent.execPolicy[toolPolicy]) {
        return refuse(agent, tool.name, 'denied', `agent "${agent.name}" may not call ${tool.name}: [exec_policy].${toolPolicy} is false`);
      }
      const toolSettings = settings[tool.name] ?? {};
      // A top-level call starts the budget its nested calls share; a nested one passes its own on.
      const nestedCalls = callOptions.nestedCalls ?? startNestedCalls(agent, tool.name);
      const toolboxFor = (callSignal: AbortSignal): ToolBox => runner.toolbox({ ...callOptions, signal: callSignal, nestedCalls }, call.toolCallId, tool.name);
      const toolbox = toolboxFor(signal);
      const context: ToolContext = {
        signal,
        agent,
        kernel: options.kernel,
        logger: options.logger.child({ agentId: agent.id, tool: tool.name, toolCallId: call.toolCallId }),
        settings: toolSettings,
        env: options.env,
        logs: options.logs,
        toolbox,
        ...(options.approvals === undefined ? {} : { askPerson: askPersonFor(options.approvals, agent, call.toolCallId, signal, emit) }),
      };
      const input = parsed.input as never;
      let required: readonly Capability[];
      try {
        required = await tool.requires(input, context);
      } catch (error) {
        return refuse(agent, tool.name, 'denied', `${tool.name} refused: ${error instanceof Error ? error.message : String(error)}`);
      }
      for (const capability of required) {
        const policy = EXEC_POLICY_BY_KIND[capability.kind];
        if (policy !== undefined && !agent.execPolicy[policy]) {
          return refuse(agent, tool.name, 'denied', `agent "${agent.name}" may not call ${tool.name}: [exec_policy].${policy} is false`);
        }
        if (!isGranted(granted, capability)) {
          return refuse(
            agent,
            tool.name,
            'denied',
            `agent "${agent.name}" is not granted ${describeCapability(capability)}; to allow it, ${suggestGrant(capability)}`,
          );
        }
        if (!allows(granted, agent, capability)) {
          return refuse(
            agent,
            tool.name,
            'denied',
            `agent "${agent.name}" may not use ${describeCapability(capability)} in this step: the step is limited to what it names`,
          );
        }
      }

      // Untrusted text carried into a sink is refused, or put to a human (docs/security-model.md).
      const taint = options.taint?.check(agent, tool, parsed.input);
      const tainted = taint === undefined ? undefined : describeTaint(tool.name, taint);
      if (taint !== undefined) {
        await options.tainted?.({ agentId: agent.id, agentName: agent.name, tool: tool.name, ...taint });
        if (taint.action === 'refuse') return refuse(agent, tool.name, 'denied', `${describeTaint(tool.name, taint)}; [taint] refuses it`);
      }
      // Only a call that would otherwise run is put to a human.
      if (approvalRequiredFor?.includes(tool.name) === true || tainted !== undefined) {
        if (options.approvals === undefined) {
          const needs =
            tainted === undefined
              ? `${tool.name} needs a human's approval ([autonomous].approval_required_for)`
              : `${tainted}; it needs a human's approval ([taint])`;
          return refuse(agent, tool.name, 'denied', `${needs}, and nobody can approve here`);
        }
        const { onApproval, resumeApproval } = callOptions;
        const decision = await askApproval(
          options.approvals,
          { agent, toolCallId: call.toolCallId, toolName: tool.name, input: call.input as JsonValue, signal, emit, reason: tainted, resumeId: resumeApproval },
          onApproval === undefined ? undefined : { onId: onApproval },
        );
        if (!decision.approved) {
          const why = decision.by === 'timeout' ? ` (${decision.reason ?? 'timed out'})` : byWhom(decision);
          return refuse(agent, tool.name, 'denied', `the call to ${tool.name} was not approved${why}${tainted === undefined ? '' : `; ${tainted}`}`);
        }
      }
      // A cancelled turn runs nothing more.
      signal.throwIfAborted();
      await callOptions.onStart?.(tool);
      const timeoutSetting = toolSettings['timeout_seconds'];
      const timeoutMs = typeof timeoutSetting === 'number' ? timeoutSetting * 1000 : DEFAULT_TOOL_TIMEOUT_MS;
      let result: ToolResult;
      let failure: ToolCallFailure | undefined;
      const startedAt = options.clock.now();
      try {
        const ran = await execute(tool, input, context, timeoutMs, toolboxFor);
        result = ran.result;
        if (ran.timedOut === true) failure = TIMED_OUT;
      } catch (error) {
        // A tool that throws gives the model its message to recover from; a LoomError's is written for people.
        const message = isLoomError(error) || error instanceof Error ? error.message : String(error);
        context.logger.warn({ err: error }, `tool ${tool.name} failed`);
        result = errorResult(`${tool.name} failed: ${message}`);
        failure = { kind: 'threw', error };
      }
      let finished: ToolFinishEntry | undefined;
      if (failure === TIMED_OUT) {
        await options.audit({ agentId: agent.id, agentName: agent.name, tool: tool.name, outcome: 'timeout', reason: result.text });
      } else {
        finished = { agentId: agent.id, agentName: agent.name, tool: tool.name, isError: result.isError === true, durationMs: options.clock.now() - startedAt };
        if (callOptions.holdFinish !== true) await options.finished?.(finished);
      }
      const capped = { ...result, text: truncateToolOutput(result.text) };
      options.taint?.observe(agent, tool, parsed.input, capped);
      const outcome: ToolCallOutcome = { result: capped };
      if (finished !== undefined && callOptions.holdFinish === true) outcome.finished = finished;
      if (verdict.action === 'warn') outcome.hint = verdict.hint;
      if (failure !== undefined) outcome.failure = failure;
      if (callOptions.nestedCalls === undefined) {
        if (outcome.hint === undefined && nestedCalls.hint !== undefined) outcome.hint = nestedCalls.hint;
        if (nestedCalls.breakLoop !== undefined) outcome.breakLoop = nestedCalls.breakLoop;
      }
      return outcome;
    },
  };
  // With tracing on, each call (a nested one too) is an `execute_tool` span; off, it runs as it is.
  const runCall = runner.run.bind(runner);
  runner.run = (call, callOptions) =>
    withToolSpan(
      { toolName: call.toolName, toolCallId: call.toolCallId, agentName: callOptions.agent.name, input: call.input },
      () => runCall(call, callOptions),
      (outcome) => ({ isError: outcome.result.isError === true, text: outcome.result.text, failure: outcome.failure?.kind }),
    );
  return runner;
}
