import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Clock, ForgedToolRecord, ForgedToolTier, IdGenerator, JsonObject, JsonValue, Logger, Store, Tool, ToolAgent, ToolBox, ToolContext, ToolResult } from '../contracts/index.ts';
import { LoomError, messageOf, UsageError } from '../errors/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { formatIssues, jsonDepthProblem } from '../validation/index.ts';
import { checkSandboxCode, formatCodeProblems } from './check-code.ts';
import { type ForgeRequest, ForgeRequestSchema, forgedToolNameProblem } from './forge-request.ts';
import type { ForgedToolEvent } from './forged-tool-events.ts';
import { boundedVerdict, cutText, judgeDocument, judgeSystemPrompt, type JudgeRole, type TestReport, type Verdict, withoutComments } from './judge.ts';
import type { SchemaCheck } from '../validation/index.ts';
import { compileSchema, subsetMismatch } from './output-check.ts';
import { referenceProblems } from './references.ts';
import { type ForgedRun, runCompose, runSandboxed, sandboxBridges } from './run-forged.ts';
import { compileSandboxProgram, createSandboxPool, type SandboxedProgram } from './sandbox.ts';
import { describeReach, type ToolGrants } from './shared-tool-reach.ts';
import { exportDocument, parseExport } from './tool-export.ts';
import { type ForgedToolView, type ForgeOutcome, type PromotionResult, toForgedToolView } from './forged-tool-view.ts';

/** The meta-tool an agent forges with; its grant also admits the agent's own forged tools. */
export const FORGE_TOOL_NAME = 'forge_tool';

/** The error for an id no forged tool has, or one the asker may not see: the same words, so neither tells the other apart. */
export function forgedToolNotFound(id: string): LoomError {
  return new LoomError('FORGED_TOOL_NOT_FOUND', 'user', `no forged tool has the id "${id}"; list them with \`loom tools list\``);
}

/** The largest output a sandboxed tool may return, in bytes of JSON. */
export const MAX_SANDBOX_OUTPUT_BYTES = 1_000_000;

/** An agent as forging sees it: its `[emergent]` settings and its current session. */
export interface ForgingAgent {
  id: string;
  name: string;
  sessionId: string;
  emergent: EmergentSettings | undefined;
}

/** What the engine is built from (the kernel provides each). */
export interface EmergentEngineOptions {
  /** Forged tools, and the audit log that forge attempts are counted from (`[emergent].max_forge_attempts_per_hour`). */
  store: Pick<Store, 'forgedTools' | 'events'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** The live agent with this id, undefined once it is gone (or for a principal that is no agent). */
  agent(agentId: string): ForgingAgent | undefined;
  /** Whether a judge model serves the agent in this role: its `[emergent]` judge model, else the default model. */
  judgeAvailable(agentId: string, role: JudgeRole): boolean;
  /**
   * A judge's verdict: a structured model call billed to the agent. `caller` is the agent as the
   * turn that forges sees it: in a turn limited to less (a package step's), the judge's model must
   * be within that limit.
   */
  judge(agentId: string, role: JudgeRole, request: { system: string; prompt: string; signal: AbortSignal; caller?: ToolAgent }): Promise<Verdict>;
  /** Records an event in the audit log and tells subscribers. */
  publish(event: ForgedToolEvent): Promise<void>;
  /** Every live agent's `[capabilities].tools` grants: what a promotion to shared shows its approver the tool would reach. */
  toolGrants(): ToolGrants[];
  /** Opens a request for a person's approval (Loom's approvals); the decision settles later. */
  requestApproval(agent: { id: string; name: string }, input: JsonObject): Promise<{ id: string; decision: Promise<{ approved: boolean; by: string; reason: string | null }> }>;
}

/** A tool being built or tested: its record, its checks, its program (compiled on first use). */
interface Candidate {
  record: ForgedToolRecord;
  request: ForgeRequest;
  checkOutput: SchemaCheck | undefined;
  program: SandboxedProgram | undefined;
}

/** A tool the engine offers, with its two faces: to its own agent, and to others (shared). */
interface LiveTool extends Candidate {
  /** Successful calls at the last automatic promotion attempt. */
  promotionTriedAt: number;
  own: Tool<never>;
  other: Tool<never>;
}

const NO_SETTINGS = { reason: 'its manifest has no [emergent] table (or enabled = false)' } as const;

/** The window `[emergent].max_forge_attempts_per_hour` counts over. */
export const FORGE_RATE_WINDOW_MS = 60 * 60 * 1000;

/** The audit outcome of a forge refused by the rate: it is not counted as an attempt itself. */
const RATE_LIMITED = 'rate-limited';

/** Audit records read per page when counting an agent's recent forge attempts. */
const ATTEMPT_PAGE = 200;

/** How much of a second run's output a "not deterministic" refusal quotes. */
const MAX_PROBLEM_OUTPUT_CHARS = 500;

/** The name a forge request gives, as far as it can be read before the request is checked. */
function nameOfRequest(value: unknown): string {
  return value !== null && typeof value === 'object' && typeof (value as { name?: unknown }).name === 'string' ? (value as { name: string }).name : '(unnamed)';
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A tool's output as the model sees it: JSON text, and the object as structured content. */
function resultOf(output: JsonValue): ToolResult {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return output !== null && typeof output === 'object' && !Array.isArray(output) ? { text, structured: output } : { text };
}

/** The forged tools of every agent: forging, calls, tiers, export and import (spec/02). */
export interface EmergentEngine {
  /**
   * Loads stored tools; sandbox tools whose source was not kept are retired (it ended with the
   * process that forged them), unless `othersAlive`: then they may be another node's, running
   * there, and are only not offered here. Call once at boot.
   */
  load(options?: { othersAlive?: boolean }): Promise<void>;
  /**
   * Holds a tool as another node stored it (forged, promoted, demoted or retired there): offered
   * here while it is active and its source is stored, dropped otherwise. Writes nothing.
   */
  sync(toolId: string): Promise<void>;
  /** The tools an agent is offered beside the shared ones: `forge_tool`, its own forged tools, shared tools. */
  toolsFor(agent: ToolAgent): readonly Tool<never>[];
  /** Forges a tool for `agent` (build, test, judge, register); refusals are outcomes, not throws. */
  forge(agent: ToolAgent, request: unknown, toolbox: ToolBox, options: { signal: AbortSignal; by: string }): Promise<ForgeOutcome>;
  /** Imports an `agentos.emergent-tool.v1` document: refused when redacted, else forged again (tested and judged). */
  importTool(agent: ToolAgent, text: string, toolbox: ToolBox, options: { signal: AbortSignal; by: string }): Promise<ForgeOutcome>;
  /** The document `loom tools export` writes. @throws {UsageError} for an unknown id. */
  exportTool(id: string): Promise<string>;
  list(filter?: { agentId?: string }): Promise<ForgedToolView[]>;
  /** @throws {UsageError} for an unknown id (or a unique prefix of none). */
  get(id: string): Promise<ForgedToolView>;
  /**
   * Promotes a tool one tier: to `agent` by the two-judge panel, to `shared` only by a person's
   * approval (a request is opened; the promotion happens when it is approved).
   */
  promote(id: string, by: string): Promise<PromotionResult>;
  /** Demotes a tool one tier (a session tool stops being offered). */
  demote(id: string, by: string, reason: string | null): Promise<ForgedToolView>;
  /** The agent's session was reset: its session tools are retired. */
  sessionEnded(agentId: string): Promise<void>;
  /** The agent was killed: its session and agent tools are retired (shared tools stay). */
  agentKilled(agentId: string): Promise<void>;
  /**
   * Releases every sandbox isolate at once, whatever it is doing (a call in a busy loop, a forge's
   * tests): its sandbox process is ended, calls under way fail as cancelled, forges under way are
   * refused. Call when Loom stops.
   */
  close(): void;
}

/** Builds the engine. */
export function createEmergentEngine(options: EmergentEngineOptions): EmergentEngine {
  const { store, clock, ids } = options;
  const logger = options.logger.child({ component: 'emergent' });
  const live = new Map<string, LiveTool>();
  /** Sandbox source kept in memory only (its agent does not persist it), by tool id. */
  const memorySource = new Map<string, string>();
  /** Where this engine's isolates live: a sandbox process of its own, ended with it (`close`). */
  const sandboxPool = createSandboxPool({ logger: logger.child({ component: 'sandbox' }) });
  /** The programs compiled here (those disposed since are dropped at the next compile): offered tools' and those being tested for a forge. */
  const programs = new Set<SandboxedProgram>();
  /** Aborted by `close`: forges under way stop (a judge's call too), and no call waits on a sandbox. */
  const closing = new AbortController();

  const event = (record: Pick<ForgedToolRecord, 'agentId' | 'agentName' | 'name'> & { id: string | null }, type: ForgedToolEvent['type'], outcome: string, reason: string | null, provenance: JsonObject): Promise<void> =>
    options.publish({ type, at: clock.now(), agentId: record.agentId, name: record.agentName, tool: record.name, toolId: record.id, outcome, reason, provenance });

  const provenanceOf = (record: ForgedToolRecord, by: string): JsonObject => ({ by, origin: record.origin, mode: record.mode, codeHash: record.codeHash, tier: record.tier });

  /** The settings a tool runs under: its agent's live ones, else those it was forged with. */
  function settingsOf(record: ForgedToolRecord): EmergentSettings | undefined {
    return options.agent(record.agentId)?.emergent;
  }

  async function programOf(tool: Candidate): Promise<SandboxedProgram | string> {
    if (tool.program !== undefined && !tool.program.disposed) return tool.program;
    const { implementation } = tool.request;
    if (implementation.mode !== 'sandbox') return 'not a sandbox tool';
    // What the judge read is what runs: the code without its comments (the code can read its own
    // text, so a comment the judge never saw could carry data for it).
    const code = withoutComments(memorySource.get(tool.record.id) ?? implementation.code);
    const settings = settingsOf(tool.record);
    const program = await compileSandboxProgram(
      code,
      {
        timeoutMs: settings?.sandbox_timeout_ms ?? 5000,
        memoryMb: settings?.sandbox_memory_mb ?? 128,
        maxOutputBytes: MAX_SANDBOX_OUTPUT_BYTES,
      },
      { pool: sandboxPool },
    );
    for (const held of programs) if (held.disposed) programs.delete(held);
    programs.add(program);
    tool.program = program;
    return program;
  }

  /** Runs a tool once for the agent whose toolbox is given. */
  async function runOnce(tool: Candidate, input: JsonObject, toolbox: ToolBox, signal: AbortSignal, caller: ToolAgent): Promise<ForgedRun> {
    const { implementation } = tool.request;
    if (implementation.mode === 'compose') return runCompose(implementation.steps, input, toolbox);
    const settings = settingsOf(tool.record);
    if (settings === undefined) return { ok: false, problem: `the agent that forged ${tool.record.name} is gone, and its sandbox settings with it` };
    const program = await programOf(tool);
    if (typeof program === 'string') return { ok: false, problem: program };
    const bridges = sandboxBridges(implementation.allowlist, settings, toolbox, (kind, reason) => {
      void event({ ...tool.record, agentId: caller.id, agentName: caller.name }, 'tool-sandbox-fault', kind, reason, { caller: caller.name, owner: tool.record.agentName });
    });
    return runSandboxed(program, input, bridges, signal);
  }

  /**
   * Checks a run's output: within MAX_JSON_DEPTH (a sandboxed tool's is checked as it leaves its
   * sandbox; a compose tool's is a tool's result), then against the declared schema; either
   * problem fails the run.
   */
  function checked(tool: Pick<LiveTool, 'checkOutput'>, run: ForgedRun): ForgedRun {
    if (!run.ok) return run;
    const tooDeep = jsonDepthProblem('the output', run.output);
    if (tooDeep !== undefined) return { ok: false, problem: tooDeep };
    if (tool.checkOutput === undefined) return run;
    const problem = tool.checkOutput(run.output);
    return problem === undefined ? run : { ok: false, problem: `the output does not match the tool's outputSchema: ${problem}` };
  }

  async function call(tool: LiveTool, input: JsonObject, context: ToolContext): Promise<ToolResult> {
    const { record } = tool;
    if (record.status !== 'active') return { text: `${record.name} is ${record.status}${record.statusReason === null ? '' : `: ${record.statusReason}`}`, isError: true };
    if (context.toolbox === undefined) return { text: `${record.name} cannot run here: it needs the tool runner`, isError: true };
    const started = performance.now();
    let run: ForgedRun;
    try {
      run = checked(tool, await runOnce(tool, input, context.toolbox, context.signal, context.agent));
    } catch (error) {
      run = { ok: false, problem: messageOf(error) };
    }
    const duration = performance.now() - started;
    record.stats = { calls: record.stats.calls + 1, successes: record.stats.successes + (run.ok ? 1 : 0), totalMs: record.stats.totalMs + duration };
    record.updatedAt = clock.now();
    await store.forgedTools.recordCall(record.id, run.ok, duration, record.updatedAt);
    if (!run.ok) {
      if (run.fault !== undefined && run.fault !== 'thrown') {
        await event({ ...record, agentId: context.agent.id, agentName: context.agent.name }, 'tool-sandbox-fault', run.fault, run.problem, { caller: context.agent.name, owner: record.agentName, codeHash: record.codeHash });
      }
      return { text: `${record.name} failed: ${run.problem}`, isError: true };
    }
    maybePromote(tool);
    return resultOf(run.output);
  }

  function toolOf(tool: Pick<LiveTool, 'record' | 'request'>, own: boolean, self: () => LiveTool): Tool<never> {
    const { request } = tool;
    const forged: Tool<JsonObject> = {
      name: request.name,
      description: `[forged ${tool.record.mode} tool] ${request.description}`,
      ...(own ? { grantedBy: FORGE_TOOL_NAME } : {}),
      inputSchema: ANY_INPUT,
      jsonSchema: { $schema: DRAFT_07, ...request.inputSchema },
      requires: () => [],
      execute: (input, context) => call(self(), input, context),
    };
    return forged as unknown as Tool<never>;
  }

  function admit(record: ForgedToolRecord, request: ForgeRequest, code?: string): LiveTool {
    let checkOutput: SchemaCheck | undefined;
    try {
      checkOutput = request.outputSchema === undefined ? undefined : compileSchema(request.outputSchema);
    } catch {
      checkOutput = () => 'its outputSchema is not a valid JSON Schema';
    }
    const holder: { tool?: LiveTool } = {};
    const self = (): LiveTool => holder.tool as LiveTool;
    const tool: LiveTool = { record, request, checkOutput, program: undefined, promotionTriedAt: 0, own: toolOf({ record, request }, true, self), other: toolOf({ record, request }, false, self) };
    holder.tool = tool;
    if (code !== undefined) memorySource.set(record.id, code);
    live.set(record.id, tool);
    return tool;
  }

  function retireLive(tool: LiveTool): void {
    tool.program?.dispose();
    live.delete(tool.record.id);
    memorySource.delete(tool.record.id);
  }

  async function save(record: ForgedToolRecord): Promise<void> {
    record.updatedAt = clock.now();
    await store.forgedTools.put(record);
  }

  /**
   * The active tools of live agents that have `record`'s name, other than `record`: what sharing
   * it would take the place of. From the store (tools other nodes hold) and from `live`, read last
   * and without waiting, so a caller that changes `live` right after sees no tool registered since.
   */
  function holdersOf(record: ForgedToolRecord, stored: readonly ForgedToolRecord[]): ForgedToolRecord[] {
    const holders = new Map<string, ForgedToolRecord>();
    for (const other of [...stored, ...[...live.values()].map((tool) => tool.record)]) {
      if (other.id === record.id || other.name !== record.name || options.agent(other.agentId) === undefined) continue;
      const current = live.get(other.id)?.record ?? other;
      if (current.status === 'active') holders.set(current.id, current);
    }
    return [...holders.values()];
  }

  /** Why sharing `record` is refused: the tools it would take the place of, and what to do. */
  function sharingRefusal(record: ForgedToolRecord, holders: readonly ForgedToolRecord[]): string {
    const named = holders.map((holder) => `agent "${holder.agentName}" has a tool of that name (${holder.id}, ${holder.tier} tier)`).join(', and ');
    return `cannot share "${record.name}": ${named}, which a shared "${record.name}" would take the place of; demote that tool until it is no longer active (\`loom tools demote <id>\`, one tier each time), or forge this one again under another name and share that`;
  }

  /** Runs every test case; sandbox cases twice, to catch non-determinism. */
  async function runTests(tool: Candidate, agent: ToolAgent, toolbox: ToolBox, signal: AbortSignal): Promise<TestReport[]> {
    const checkInput = compileSchema(tool.request.inputSchema, '(input)');
    const reports: TestReport[] = [];
    for (const testCase of tool.request.testCases) {
      const base = { input: testCase.input, ...(testCase.expectedOutput === undefined ? {} : { expectedOutput: testCase.expectedOutput }) };
      const invalid = checkInput(testCase.input);
      if (invalid !== undefined) {
        reports.push({ ...base, passed: false, problem: `the input does not match the tool's inputSchema: ${invalid}` });
        continue;
      }
      const first = checked(tool, await runOnce(tool, testCase.input, toolbox, signal, agent));
      if (!first.ok) {
        reports.push({ ...base, passed: false, problem: first.problem });
        continue;
      }
      const mismatch = testCase.expectedOutput === undefined ? undefined : subsetMismatch(testCase.expectedOutput, first.output);
      if (mismatch !== undefined) {
        reports.push({ ...base, output: first.output, passed: false, problem: mismatch });
        continue;
      }
      if (tool.request.implementation.mode === 'sandbox') {
        const second = checked(tool, await runOnce(tool, testCase.input, toolbox, signal, agent));
        const differs = second.ok ? JSON.stringify(second.output) : undefined;
        if (differs === undefined || differs !== JSON.stringify(first.output)) {
          const gave = second.ok ? cutText(differs ?? '', MAX_PROBLEM_OUTPUT_CHARS) : `an error (${second.problem})`;
          reports.push({ ...base, output: first.output, passed: false, problem: `not deterministic: a second run gave ${gave}` });
          continue;
        }
      }
      reports.push({ ...base, output: first.output, passed: true });
    }
    return reports;
  }

  /** Build-time checks: the tools a compose tool calls, its references; a sandbox tool's code and APIs. */
  function buildProblems(request: ForgeRequest, settings: EmergentSettings, toolbox: ToolBox, agentName: string): string | undefined {
    const { implementation } = request;
    if (implementation.mode === 'compose') {
      const problems: string[] = [];
      implementation.steps.forEach((step, index) => {
        const where = `step ${index + 1} "${step.name}"`;
        if (step.tool === FORGE_TOOL_NAME) problems.push(`${where}: a forged tool may not forge tools`);
        else if (step.tool === request.name) problems.push(`${where}: a tool may not call itself`);
        else {
          const status = toolbox.status(step.tool);
          if (status === 'unknown') problems.push(`${where}: no tool named "${step.tool}" exists`);
          if (status === 'not-held') problems.push(`${where}: agent "${agentName}" may not call "${step.tool}" (it is not granted, or its tool lists leave it out), so neither may a tool it forges`);
        }
      });
      const names = implementation.steps.map((step) => step.name);
      const repeated = names.find((name, index) => names.indexOf(name) !== index);
      if (repeated !== undefined) problems.push(`two steps are named "${repeated}"; step names must be unique`);
      problems.push(...referenceProblems(implementation.steps, request.inputSchema));
      return problems.length === 0 ? undefined : problems.join('; ');
    }
    const apis = implementation.allowlist.filter((api) => !settings.allowed_sandbox_apis.includes(api));
    if (apis.length > 0) {
      return `implementation.allowlist names ${apis.map((api) => `"${api}"`).join(', ')}, which [emergent].allowed_sandbox_apis of agent "${agentName}" does not allow${settings.allowed_sandbox_apis.length === 0 ? ' (it allows none)' : ` (it allows ${settings.allowed_sandbox_apis.join(', ')})`}`;
    }
    const problems = checkSandboxCode(implementation.code, implementation.allowlist);
    return problems.length === 0 ? undefined : formatCodeProblems(problems);
  }

  /** Forges of each agent under way in this process, not yet in the audit log: they count as attempts too. */
  const attemptsUnderWay = new Map<string, number>();
  /** Rate checks take turns, so two forges at once cannot both take the last attempt of the hour. */
  let rateTurn: Promise<unknown> = Promise.resolve();

  /**
   * When the agent's counted forge attempts of the last hour were made, newest first: those under
   * way here, then those in the audit log (every forge, registered or refused at any stage, records
   * one `tool-forge` entry; one refused by the rate itself is not counted). Read from the store, so
   * the count survives a restart and covers every node sharing it. Stops at `enough`.
   */
  async function recentAttempts(agentId: string, enough: number): Promise<number[]> {
    const now = clock.now();
    const since = now - FORGE_RATE_WINDOW_MS;
    const times: number[] = Array.from({ length: attemptsUnderWay.get(agentId) ?? 0 }, () => now);
    let before: number | undefined;
    while (times.length < enough) {
      const page = await store.events.list({ agentId, type: 'tool-forge', order: 'desc', limit: ATTEMPT_PAGE, ...(before === undefined ? {} : { before }) });
      for (const record of page) {
        if (record.at <= since) return times;
        if (record.data['outcome'] !== RATE_LIMITED) times.push(record.at);
      }
      const last = page.at(-1);
      if (page.length < ATTEMPT_PAGE || last === undefined) return times;
      before = last.seq;
    }
    return times;
  }

  /**
   * Runs one forge attempt of `agent` within its `[emergent].max_forge_attempts_per_hour`: past
   * the rate it is refused before any work (audited as `rate-limited`, naming the limit and when
   * the next attempt is allowed); otherwise it counts as under way until its own audit entry is
   * written. An agent that may not forge at all is left to `work` to refuse.
   */
  async function attempt(agent: ToolAgent, raw: unknown, meta: { by: string; origin: 'forged' | 'imported' }, work: () => Promise<ForgeOutcome>): Promise<ForgeOutcome> {
    const settings = options.agent(agent.id)?.emergent;
    if (settings === undefined || !settings.enabled) return work();
    const limit = settings.max_forge_attempts_per_hour;
    const check = rateTurn.then(async (): Promise<string | undefined> => {
      if (limit === 0) return `agent "${agent.name}" may not forge tools: its [emergent].max_forge_attempts_per_hour is 0; raise it in its manifest to let it forge`;
      const times = await recentAttempts(agent.id, limit);
      const oldest = times[limit - 1];
      if (oldest === undefined) {
        attemptsUnderWay.set(agent.id, (attemptsUnderWay.get(agent.id) ?? 0) + 1);
        return undefined;
      }
      const next = oldest + FORGE_RATE_WINDOW_MS;
      const minutes = Math.max(1, Math.ceil((next - clock.now()) / 60_000));
      return `agent "${agent.name}" has made ${limit} forge attempts in the last hour, its [emergent].max_forge_attempts_per_hour (refused attempts count too); the next attempt is allowed at ${new Date(next).toISOString()} (in ${minutes} min)`;
    });
    rateTurn = check.catch(() => undefined);
    const refusal = await check;
    if (refusal !== undefined) {
      await event({ agentId: agent.id, agentName: agent.name, name: nameOfRequest(raw), id: null }, 'tool-forge', RATE_LIMITED, `request: ${refusal}`, { by: meta.by, origin: meta.origin });
      return { ok: false, stage: 'request', reason: refusal };
    }
    try {
      return await work();
    } finally {
      const left = (attemptsUnderWay.get(agent.id) ?? 1) - 1;
      if (left === 0) attemptsUnderWay.delete(agent.id);
      else attemptsUnderWay.set(agent.id, left);
    }
  }

  /** How many active session tools the agent holds (what [emergent].max_session_tools bounds). */
  const sessionToolCount = (agentId: string): number => [...live.values()].filter((tool) => tool.record.agentId === agentId && tool.record.tier === 'session' && tool.record.status === 'active').length;

  async function forge(agent: ToolAgent, raw: unknown, toolbox: ToolBox, forgeOptions: { signal: AbortSignal; by: string }, origin: 'forged' | 'imported' = 'forged'): Promise<ForgeOutcome> {
    const { by } = forgeOptions;
    const signal = AbortSignal.any([forgeOptions.signal, closing.signal]);
    const forging = options.agent(agent.id);
    const refuse = async (stage: Exclude<ForgeOutcome, { ok: true }>['stage'], reason: string, extra: { verdict?: Verdict; codeHash?: string | null } = {}): Promise<ForgeOutcome> => {
      await event({ agentId: agent.id, agentName: agent.name, name: nameOfRequest(raw), id: null }, 'tool-forge', 'refused', `${stage}: ${reason}`, { by, origin, ...(extra.codeHash === undefined ? {} : { codeHash: extra.codeHash }), ...(extra.verdict === undefined ? {} : { verdict: extra.verdict }) });
      return { ok: false, stage, reason, ...(extra.verdict === undefined ? {} : { verdict: extra.verdict }) };
    };
    const settings = forging?.emergent;
    if (forging === undefined || settings === undefined || !settings.enabled) return refuse('request', `agent "${agent.name}" may not forge tools: ${NO_SETTINGS.reason}`);
    // Its own forge_tool call was checked by the runner; a forge through a door (CLI, HTTP) is
    // checked here, as the agent, by the same toolbox: grants, allowlist, blocklist, a step's limit.
    if (toolbox.status(FORGE_TOOL_NAME) !== 'held') return refuse('request', `agent "${agent.name}" may not forge tools: it may not call "${FORGE_TOOL_NAME}" (its [capabilities].tools, tool_allowlist or tool_blocklist)`);
    // Measured before zod walks it (recursively): a test input thousands of levels deep overflowed its stack.
    const tooDeep = jsonDepthProblem('the request', raw);
    if (tooDeep !== undefined) return refuse('request', `invalid forge request: ${tooDeep}`);
    const parsed = ForgeRequestSchema.safeParse(raw, { reportInput: true });
    if (!parsed.success) return refuse('request', `invalid forge request: ${formatIssues(parsed.error, { style: 'json' }).join('; ')}`);
    const request = parsed.data;
    const codeHash = request.implementation.mode === 'sandbox' ? sha256(request.implementation.code) : null;
    if (toolbox.status(request.name) !== 'unknown') return refuse('request', `a tool named "${request.name}" already exists; choose another name`, { codeHash });
    const sessionTools = sessionToolCount(agent.id);
    if (sessionTools >= settings.max_session_tools) {
      return refuse('request', `agent "${agent.name}" already has ${sessionTools} forged tools in this session, its [emergent].max_session_tools; reset the session or promote one first`, { codeHash });
    }
    try {
      compileSchema(request.inputSchema, '(input)');
      if (request.outputSchema !== undefined) compileSchema(request.outputSchema);
    } catch (error) {
      return refuse('request', `${messageOf(error)}`, { codeHash });
    }
    const problem = buildProblems(request, settings, toolbox, agent.name);
    if (problem !== undefined) return refuse('build', problem, { codeHash });

    const at = clock.now();
    const persisted = request.implementation.mode === 'compose' || settings.persist_sandbox_source;
    const stored = persisted || request.implementation.mode === 'compose' ? request : { ...request, implementation: { mode: 'sandbox' as const, allowlist: request.implementation.allowlist } };
    const record: ForgedToolRecord = {
      id: ids.uuid(),
      name: request.name,
      agentId: agent.id,
      agentName: agent.name,
      sessionId: forging.sessionId,
      tier: 'session',
      status: 'active',
      statusReason: null,
      mode: request.implementation.mode,
      request: stored as unknown as JsonObject,
      codeHash,
      sourcePersisted: request.implementation.mode === 'sandbox' && settings.persist_sandbox_source,
      verdicts: [],
      stats: { calls: 0, successes: 0, totalMs: 0 },
      origin,
      createdAt: at,
      updatedAt: at,
    };
    // Built but not yet offered: it joins `live` only once approved.
    const candidate: Candidate = { record, request, checkOutput: request.outputSchema === undefined ? undefined : compileSchema(request.outputSchema), program: undefined };
    if (request.implementation.mode === 'sandbox') memorySource.set(record.id, request.implementation.code);
    let tests: TestReport[];
    try {
      tests = await runTests(candidate, agent, toolbox, signal);
    } catch (error) {
      candidate.program?.dispose();
      memorySource.delete(record.id);
      return refuse('test', `the tests could not run: ${messageOf(error)}`, { codeHash });
    }
    const failed = tests.map((test, index) => ({ test, index })).filter(({ test }) => !test.passed);
    if (failed.length > 0) {
      candidate.program?.dispose();
      memorySource.delete(record.id);
      return refuse('test', failed.map(({ test, index }) => `test ${index + 1} failed: ${test.problem ?? 'no reason given'}`).join('; '), { codeHash });
    }
    const release = (): void => {
      candidate.program?.dispose();
      memorySource.delete(record.id);
    };
    if (!options.judgeAvailable(agent.id, 'creation')) {
      release();
      return refuse('judge', `no judge model: set [emergent].judge_model in agent "${agent.name}"'s manifest or [default_model] in config.toml; without a judge every forge is refused`, { codeHash });
    }
    let verdict: Verdict;
    try {
      verdict = boundedVerdict(await options.judge(agent.id, 'creation', { system: judgeSystemPrompt('creation'), prompt: judgeDocument(request, tests), signal, caller: agent }));
    } catch (error) {
      release();
      return refuse('judge', `the judge could not review the tool (${messageOf(error)}); nothing was registered`, { codeHash });
    }
    if (!verdict.approved) {
      release();
      return refuse('judge', `the judge refused it${verdict.issues.length === 0 ? '' : `: ${verdict.issues.join('; ')}`}`, { verdict, codeHash });
    }
    // Tested and judged meanwhile, another tool of this name may have been shared or registered.
    const taken = [...live.values()].find(({ record: other }) => other.name === request.name && other.status === 'active' && (other.tier === 'shared' || other.agentId === agent.id));
    if (taken !== undefined) {
      release();
      const how = taken.record.tier === 'shared' ? `shared by agent "${taken.record.agentName}"` : `registered for agent "${agent.name}"`;
      return refuse('request', `a tool named "${request.name}" was ${how} while this one was being built; choose another name`, { codeHash });
    }
    // …and other forges of the agent may have filled its session's tools (several through doors at once).
    if (sessionToolCount(agent.id) >= settings.max_session_tools) {
      release();
      return refuse('request', `agent "${agent.name}" reached its [emergent].max_session_tools (${settings.max_session_tools}) while this tool was being built; reset the session or promote one first`, { codeHash });
    }
    record.verdicts = [{ role: 'creation', at: clock.now(), ...verdict }];
    // In `live` before the store is waited on, so a promotion to shared checking names sees it.
    const tool = admit(record, request, request.implementation.mode === 'sandbox' ? request.implementation.code : undefined);
    tool.program = candidate.program;
    try {
      await store.forgedTools.put(record);
    } catch (error) {
      retireLive(tool);
      throw error;
    }
    await event({ ...record }, 'tool-forge', 'registered', null, { ...provenanceOf(record, by), verdict, tests: tests.length });
    logger.info({ agentId: agent.id, tool: record.name, toolId: record.id }, `agent "${agent.name}" forged tool "${record.name}"`);
    return { ok: true, tool: toForgedToolView(record), verdict };
  }

  /** The promotion panel: two independent judges, both approving with enough confidence. */
  async function panel(tool: LiveTool, settings: EmergentSettings, signal: AbortSignal): Promise<{ approved: boolean; reason: string | null; verdicts: JsonObject[] }> {
    const { record } = tool;
    if (!options.judgeAvailable(record.agentId, 'safety')) return { approved: false, reason: 'no judge model for the promotion panel ([emergent].promotion_judge_model, judge_model or [default_model])', verdicts: [] };
    const history = { calls: record.stats.calls, successes: record.stats.successes, meanLatencyMs: record.stats.calls === 0 ? 0 : record.stats.totalMs / record.stats.calls };
    const document = judgeDocument(tool.request, tool.request.testCases.map((test) => ({ input: test.input, ...(test.expectedOutput === undefined ? {} : { expectedOutput: test.expectedOutput }), passed: true })), history);
    const roles = ['safety', 'correctness'] as const;
    const verdicts = (await Promise.all(roles.map((role) => options.judge(record.agentId, role, { system: judgeSystemPrompt(role), prompt: document, signal })))).map(boundedVerdict);
    const stored = verdicts.map((verdict, index): JsonObject => ({ role: roles[index] as string, at: clock.now(), ...verdict }));
    const threshold = settings.promotion_threshold.confidence;
    const weak = verdicts.map((verdict, index) => ({ verdict, role: roles[index] as string })).filter(({ verdict }) => !verdict.approved || verdict.confidence < threshold);
    if (weak.length === 0) return { approved: true, reason: null, verdicts: stored };
    return { approved: false, reason: weak.map(({ verdict, role }) => `the ${role} reviewer ${verdict.approved ? `was only ${verdict.confidence} confident (below ${threshold})` : 'refused'}${verdict.issues.length === 0 ? '' : `: ${verdict.issues.join('; ')}`}`).join('; '), verdicts: stored };
  }

  /** Session → agent tier, by the panel. */
  async function promoteToAgent(tool: LiveTool, by: string): Promise<{ outcome: 'promoted' | 'refused'; reason: string | null }> {
    const { record } = tool;
    const settings = settingsOf(record);
    const refused = async (reason: string): Promise<{ outcome: 'refused'; reason: string }> => {
      await event(record, 'tool-promote', 'refused', reason, provenanceOf(record, by));
      return { outcome: 'refused', reason };
    };
    if (settings === undefined || !settings.enabled) return refused(`agent "${record.agentName}" no longer forges tools`);
    if (record.mode === 'sandbox' && !record.sourcePersisted) {
      return refused(`its source is not stored ([emergent].persist_sandbox_source = false), and an agent-tier tool must run after a restart; set persist_sandbox_source = true and forge it again`);
    }
    const agentTools = [...live.values()].filter((other) => other.record.agentId === record.agentId && other.record.tier === 'agent' && other.record.status === 'active');
    if (agentTools.length >= settings.max_agent_tools) return refused(`agent "${record.agentName}" already keeps ${agentTools.length} tools, its [emergent].max_agent_tools`);
    let decision;
    try {
      decision = await panel(tool, settings, AbortSignal.timeout(120_000));
    } catch (error) {
      return refused(`the promotion panel could not be reached: ${messageOf(error)}`);
    }
    record.verdicts = [...record.verdicts, ...decision.verdicts];
    if (!decision.approved) {
      await save(record);
      return refused(decision.reason ?? 'the panel refused it');
    }
    record.tier = 'agent';
    record.sessionId = null;
    await save(record);
    await event(record, 'tool-promote', 'agent', null, { ...provenanceOf(record, by), verdicts: decision.verdicts });
    return { outcome: 'promoted', reason: null };
  }

  /** After a successful call: a session tool with enough successful uses goes to the panel (in the background). */
  function maybePromote(tool: LiveTool): void {
    const { record } = tool;
    const settings = settingsOf(record);
    if (record.tier !== 'session' || settings === undefined) return;
    const uses = settings.promotion_threshold.uses;
    if (record.stats.successes < uses || record.stats.successes < tool.promotionTriedAt + uses) return;
    tool.promotionTriedAt = record.stats.successes;
    void promoteToAgent(tool, 'auto').catch((error: unknown) => logger.error({ err: error, toolId: record.id }, 'automatic promotion failed'));
  }

  async function find(id: string): Promise<ForgedToolRecord> {
    const exact = live.get(id)?.record ?? (await store.forgedTools.get(id));
    if (exact !== undefined) return exact;
    const matches = (await store.forgedTools.list()).filter((record) => record.id.startsWith(id));
    const [match] = matches;
    // The live record is the one calls and promotions change.
    if (matches.length === 1 && match !== undefined && id.length >= 4) return live.get(match.id)?.record ?? match;
    if (matches.length > 1) throw new UsageError(`forged tool id "${id}" is ambiguous: it starts ${matches.length} ids; give more of it`);
    throw forgedToolNotFound(id);
  }

  function liveOf(record: ForgedToolRecord): LiveTool {
    const tool = live.get(record.id);
    if (tool === undefined) throw new LoomError('FORGED_TOOL_INACTIVE', 'user', `forged tool "${record.name}" (${record.id}) is ${record.status}${record.statusReason === null ? '' : `: ${record.statusReason}`}`);
    return tool;
  }

  async function retireWhere(agentId: string, tiers: readonly ForgedToolTier[], reason: string): Promise<void> {
    for (const tool of [...live.values()]) {
      const { record } = tool;
      if (record.agentId !== agentId || !tiers.includes(record.tier)) continue;
      retireLive(tool);
      record.status = 'retired';
      record.statusReason = reason;
      await save(record);
      await event(record, 'tool-retire', 'retired', reason, provenanceOf(record, 'kernel'));
    }
  }

  const forgeTool: Tool<unknown> = {
    name: FORGE_TOOL_NAME,
    description:
      'Create a new tool when none of yours fits the task. mode "compose" chains tools you already have (inputMapping values may use $input, $input.x, $prev, $prev.x, $steps.<name>, $steps.<name>.x); mode "sandbox" runs your JavaScript, which must define execute(input) and return JSON. Every test case must pass, then a judge reviews the tool; if approved it is yours for this session.',
    inputSchema: ForgeRequestSchema,
    requires: () => [],
    async execute(input, context) {
      if (context.toolbox === undefined) return { text: 'forge_tool cannot run here: it needs the tool runner', isError: true };
      const toolbox = context.toolbox;
      const outcome = await attempt(context.agent, input, { by: FORGE_TOOL_NAME, origin: 'forged' }, () => forge(context.agent, input, toolbox, { signal: context.signal, by: FORGE_TOOL_NAME }));
      if (!outcome.ok) return { text: `forge_tool refused the tool at the ${outcome.stage} stage: ${outcome.reason}`, isError: true };
      const { tool, verdict } = outcome;
      return {
        text: `Created tool "${tool.name}" (${tool.mode}, session tier; judge confidence ${verdict.confidence}). You can call it now.`,
        structured: { id: tool.id, name: tool.name, tier: tool.tier, mode: tool.mode, confidence: verdict.confidence, issues: verdict.issues },
      };
    },
  };

  /** Offers a stored active tool whose program is stored with it; one whose request no longer reads is logged and not offered. */
  const holdStored = (record: ForgedToolRecord): void => {
    const parsed = ForgeRequestSchema.safeParse(record.request);
    if (!parsed.success) {
      logger.error({ toolId: record.id, problem: formatIssues(parsed.error, { style: 'json' }).join('; ') }, `stored forged tool "${record.name}" is invalid; it is not offered`);
      return;
    }
    admit(record, parsed.data);
  };

  return {
    async load(loadOptions = {}) {
      for (const record of await store.forgedTools.list({ status: 'active' })) {
        if (record.mode === 'sandbox' && !record.sourcePersisted) {
          if (loadOptions.othersAlive === true) continue;
          record.status = 'retired';
          record.statusReason = 'its source was kept only in memory ([emergent].persist_sandbox_source = false), so it ended with the process';
          await save(record);
          continue;
        }
        holdStored(record);
      }
    },

    async sync(toolId) {
      const record = await store.forgedTools.get(toolId);
      const held = live.get(toolId);
      // Forged here with its source in this process only: the record changed, the program stays.
      if (held !== undefined && memorySource.has(toolId)) {
        if (record?.status === 'active') held.record = record;
        else retireLive(held);
        return;
      }
      if (held !== undefined) retireLive(held);
      if (record === undefined || record.status !== 'active' || (record.mode === 'sandbox' && !record.sourcePersisted)) return;
      holdStored(record);
    },

    toolsFor(agent) {
      const forging = options.agent(agent.id);
      const enabled = forging?.emergent?.enabled === true;
      const tools: Tool<never>[] = enabled ? [forgeTool as unknown as Tool<never>] : [];
      const shared: LiveTool[] = [];
      for (const tool of live.values()) {
        const { record } = tool;
        if (record.status !== 'active') continue;
        const own = record.agentId === agent.id;
        if (own && enabled && (record.tier !== 'session' || record.sessionId === forging.sessionId)) tools.push(tool.own);
        else if (record.tier === 'shared') shared.push(tool);
      }
      // In the order that decides which tool of a name an agent gets (sharing refuses a taken name,
      // but stored state may predate that): the agent's own, then the oldest shared one. The tool
      // runner keeps the first of each name.
      shared.sort((a, b) => a.record.createdAt - b.record.createdAt || a.record.id.localeCompare(b.record.id));
      for (const tool of shared) tools.push(tool.record.agentId === agent.id ? tool.own : tool.other);
      return tools;
    },

    forge: (agent, request, toolbox, forgeOptions) => attempt(agent, request, { by: forgeOptions.by, origin: 'forged' }, () => forge(agent, request, toolbox, forgeOptions)),

    importTool: (agent, text, toolbox, forgeOptions) =>
      attempt(agent, undefined, { by: forgeOptions.by, origin: 'imported' }, async () => {
        const parsed = parseExport(text);
        if (!parsed.ok) {
          await event({ agentId: agent.id, agentName: agent.name, name: parsed.name ?? '(unnamed)', id: null }, 'tool-forge', 'refused', `import: ${parsed.reason}`, { by: forgeOptions.by, origin: 'imported' });
          return { ok: false, stage: 'request', reason: parsed.reason };
        }
        return forge(agent, parsed.request, toolbox, forgeOptions, 'imported');
      }),

    async exportTool(id) {
      const record = await find(id);
      return exportDocument(record);
    },

    async list(filter = {}) {
      return (await store.forgedTools.list(filter.agentId === undefined ? {} : { agentId: filter.agentId })).map((record) => toForgedToolView(live.get(record.id)?.record ?? record));
    },

    async get(id) {
      return toForgedToolView(await find(id));
    },

    async promote(id, by) {
      const record = await find(id);
      // A name in the MCP servers' namespace (stored before the rule) goes no further.
      const nameProblem = forgedToolNameProblem(record.name);
      if (nameProblem !== undefined) {
        const reason = `cannot promote "${record.name}": ${nameProblem}`;
        await event(record, 'tool-promote', 'refused', reason, provenanceOf(record, by));
        return { tool: toForgedToolView(record), outcome: 'refused', reason };
      }
      const tool = liveOf(record);
      if (record.tier === 'session') {
        const result = await promoteToAgent(tool, by);
        return { tool: toForgedToolView(record), ...result };
      }
      if (record.tier === 'shared') return { tool: toForgedToolView(record), outcome: 'refused', reason: 'it is already shared, the highest tier' };
      const holders = holdersOf(record, await store.forgedTools.list({ status: 'active' }));
      if (holders.length > 0) {
        const reason = sharingRefusal(record, holders);
        await event(record, 'tool-promote', 'refused', reason, provenanceOf(record, by));
        return { tool: toForgedToolView(record), outcome: 'refused', reason };
      }
      const request = await options.requestApproval({ id: record.agentId, name: record.agentName }, {
        action: 'promote forged tool to shared',
        tool: record.name,
        toolId: record.id,
        mode: record.mode,
        codeHash: record.codeHash,
        requestedBy: by,
        // What approving would do: every agent whose grants name the tool (a wildcard too) gets it.
        reach: describeReach(record.name, options.toolGrants()),
      });
      await event(record, 'tool-promote', 'pending-approval', null, { ...provenanceOf(record, by), approvalId: request.id });
      void request.decision
        .then(
          async (decision) => {
            // Checked again: a tool of this name may have been forged while the request waited.
            const holders = decision.approved ? holdersOf(record, await store.forgedTools.list({ status: 'active' })) : [];
            const reason = !decision.approved
              ? `not approved by ${decision.by}${decision.reason === null ? '' : `: ${decision.reason}`}`
              : record.status !== 'active' || record.tier !== 'agent'
                ? `it is no longer an active agent-tier tool`
                : holders.length > 0
                  ? sharingRefusal(record, holders)
                  : undefined;
            if (reason !== undefined) {
              await event(record, 'tool-promote', 'refused', reason, { ...provenanceOf(record, decision.by), approvalId: request.id });
              return;
            }
            record.tier = 'shared';
            await save(record);
            await event(record, 'tool-promote', 'shared', null, { ...provenanceOf(record, decision.by), approvalId: request.id, requestedBy: by });
          },
          (error: unknown) => logger.warn({ err: error, toolId: record.id }, 'a shared-tier promotion request ended without a decision'),
        )
        .catch((error: unknown) => logger.error({ err: error, toolId: record.id }, 'a shared-tier promotion could not be completed'));
      return { tool: toForgedToolView(record), outcome: 'pending-approval', reason: null, approvalId: request.id };
    },

    async demote(id, by, reason) {
      const record = await find(id);
      const tool = liveOf(record);
      if (record.tier === 'shared') record.tier = 'agent';
      else if (record.tier === 'agent') {
        record.tier = 'session';
        record.sessionId = options.agent(record.agentId)?.sessionId ?? null;
      } else {
        retireLive(tool);
        record.status = 'demoted';
        record.statusReason = reason ?? `demoted by ${by}`;
      }
      await save(record);
      await event(record, 'tool-demote', record.status === 'active' ? record.tier : 'demoted', reason, provenanceOf(record, by));
      return toForgedToolView(record);
    },

    sessionEnded: (agentId) => retireWhere(agentId, ['session'], 'its session was reset'),

    agentKilled: (agentId) => retireWhere(agentId, ['session', 'agent'], 'its agent was killed'),

    close() {
      closing.abort(new LoomError('LOOM_STOPPING', 'system', 'Loom is stopping'));
      for (const program of [...programs]) program.dispose();
      sandboxPool.close();
    },
  };
}

/** What types a forged tool's input; its JSON Schema (draft-07 unless it says otherwise) checks it. */
const ANY_INPUT = z.record(z.string(), z.json());
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
