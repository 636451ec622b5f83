import { createHash } from 'node:crypto';
import type { ForgedToolRecord, JsonObject, ToolAgent, ToolBox } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { formatIssues, jsonDepthProblem } from '../validation/index.ts';
import { checkSandboxCode, formatCodeProblems } from './check-code.ts';
import { type Candidate, type EngineState, provenanceOf, publishEvent, retireLive, sessionToolCount } from './engine-state.ts';
import { admit, checked, runOnce } from './forged-calls.ts';
import { FORGE_TOOL_NAME, type ForgeRequest, ForgeRequestSchema } from './forge-request.ts';
import { nameOfRequest } from './forge-rate.ts';
import { type ForgeOutcome, toForgedToolView } from './forged-tool-view.ts';
import { boundedVerdict, cutText, judgeDocument, judgeSystemPrompt, type TestReport, type Verdict } from './judge.ts';
import { compileSchema, subsetMismatch } from './output-check.ts';
import { referenceProblems } from './references.ts';

const NO_SETTINGS = { reason: 'its manifest has no [emergent] table (or enabled = false)' } as const;

/** How much of a second run's output a "not deterministic" refusal quotes. */
const MAX_PROBLEM_OUTPUT_CHARS = 500;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A forge asked for: by which agent, the request as given, the toolbox it is built and tested with, who asked, how it came. */
export interface ForgeAsked {
  agent: ToolAgent;
  raw: unknown;
  toolbox: ToolBox;
  signal: AbortSignal;
  by: string;
  origin: 'forged' | 'imported';
}

/** What a tool is tested as: the agent it runs for, its toolbox, and the forge's signal. */
interface TestRun {
  agent: ToolAgent;
  toolbox: ToolBox;
  signal: AbortSignal;
}

/** Runs every test case; sandbox cases twice, to catch non-determinism. */
async function runTests(state: EngineState, tool: Candidate, run: TestRun): Promise<TestReport[]> {
  const { agent, toolbox, signal } = run;
  const checkInput = compileSchema(tool.request.inputSchema, '(input)');
  const reports: TestReport[] = [];
  for (const testCase of tool.request.testCases) {
    const base = { input: testCase.input, ...(testCase.expectedOutput === undefined ? {} : { expectedOutput: testCase.expectedOutput }) };
    const invalid = checkInput(testCase.input);
    if (invalid !== undefined) {
      reports.push({ ...base, passed: false, problem: `the input does not match the tool's inputSchema: ${invalid}` });
      continue;
    }
    const once = { input: testCase.input, toolbox, signal, caller: agent };
    const first = checked(tool, await runOnce(state, tool, once));
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
      const second = checked(tool, await runOnce(state, tool, once));
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

/** What a tool's build-time checks read: its request, its agent's settings, toolbox and name. */
interface BuildCheck {
  request: ForgeRequest;
  settings: EmergentSettings;
  toolbox: ToolBox;
  agentName: string;
}

/** Build-time checks: the tools a compose tool calls, its references; a sandbox tool's code and APIs. */
function buildProblems(build: BuildCheck): string | undefined {
  const { request, settings, toolbox, agentName } = build;
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
        if (status === 'not-held')
          problems.push(
            `${where}: agent "${agentName}" may not call "${step.tool}" (it is not granted, or its tool lists leave it out), so neither may a tool it forges`,
          );
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

/**
 * Forges a tool: the request checked, the tool built and tested, judged, then registered for the
 * agent's session. Every refusal is audited and returned as an outcome, not thrown.
 */
export async function forge(state: EngineState, asked: ForgeAsked): Promise<ForgeOutcome> {
  const { options, closing, memorySource, live, logger } = state;
  const { clock, ids, store } = options;
  const { agent, raw, toolbox, by, origin } = asked;
  const signal = AbortSignal.any([asked.signal, closing.signal]);
  const forging = options.agent(agent.id);
  const refuse = async (
    stage: Exclude<ForgeOutcome, { ok: true }>['stage'],
    reason: string,
    extra: { verdict?: Verdict; codeHash?: string | null } = {},
  ): Promise<ForgeOutcome> => {
    await publishEvent(
      state,
      { agentId: agent.id, agentName: agent.name, name: nameOfRequest(raw), id: null },
      {
        type: 'tool-forge',
        outcome: 'refused',
        reason: `${stage}: ${reason}`,
        provenance: {
          by,
          origin,
          ...(extra.codeHash === undefined ? {} : { codeHash: extra.codeHash }),
          ...(extra.verdict === undefined ? {} : { verdict: extra.verdict }),
        },
      },
    );
    return { ok: false, stage, reason, ...(extra.verdict === undefined ? {} : { verdict: extra.verdict }) };
  };
  const settings = forging?.emergent;
  if (forging === undefined || settings === undefined || !settings.enabled)
    return refuse('request', `agent "${agent.name}" may not forge tools: ${NO_SETTINGS.reason}`);
  // Its own forge_tool call was checked by the runner; a forge through a door (CLI, HTTP) is
  // checked here, as the agent, by the same toolbox: grants, allowlist, blocklist, a step's limit.
  if (toolbox.status(FORGE_TOOL_NAME) !== 'held')
    return refuse(
      'request',
      `agent "${agent.name}" may not forge tools: it may not call "${FORGE_TOOL_NAME}" (its [capabilities].tools, tool_allowlist or tool_blocklist)`,
    );
  // Measured before zod walks it (recursively): a test input thousands of levels deep overflowed its stack.
  const tooDeep = jsonDepthProblem('the request', raw);
  if (tooDeep !== undefined) return refuse('request', `invalid forge request: ${tooDeep}`);
  const parsed = ForgeRequestSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) return refuse('request', `invalid forge request: ${formatIssues(parsed.error, { style: 'json' }).join('; ')}`);
  const request = parsed.data;
  const codeHash = request.implementation.mode === 'sandbox' ? sha256(request.implementation.code) : null;
  if (toolbox.status(request.name) !== 'unknown') return refuse('request', `a tool named "${request.name}" already exists; choose another name`, { codeHash });
  const sessionTools = sessionToolCount(state, agent.id);
  if (sessionTools >= settings.max_session_tools) {
    return refuse(
      'request',
      `agent "${agent.name}" already has ${sessionTools} forged tools in this session, its [emergent].max_session_tools; reset the session or promote one first`,
      { codeHash },
    );
  }
  try {
    compileSchema(request.inputSchema, '(input)');
    if (request.outputSchema !== undefined) compileSchema(request.outputSchema);
  } catch (error) {
    return refuse('request', `${messageOf(error)}`, { codeHash });
  }
  const problem = buildProblems({ request, settings, toolbox, agentName: agent.name });
  if (problem !== undefined) return refuse('build', problem, { codeHash });

  const at = clock.now();
  const persisted = request.implementation.mode === 'compose' || settings.persist_sandbox_source;
  const stored =
    persisted || request.implementation.mode === 'compose'
      ? request
      : { ...request, implementation: { mode: 'sandbox' as const, allowlist: request.implementation.allowlist } };
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
  const candidate: Candidate = {
    record,
    request,
    checkOutput: request.outputSchema === undefined ? undefined : compileSchema(request.outputSchema),
    program: undefined,
  };
  if (request.implementation.mode === 'sandbox') memorySource.set(record.id, request.implementation.code);
  const release = (): void => {
    candidate.program?.dispose();
    memorySource.delete(record.id);
  };
  let tests: TestReport[];
  try {
    tests = await runTests(state, candidate, { agent, toolbox, signal });
  } catch (error) {
    release();
    return refuse('test', `the tests could not run: ${messageOf(error)}`, { codeHash });
  }
  const failed = tests.map((test, index) => ({ test, index })).filter(({ test }) => !test.passed);
  if (failed.length > 0) {
    release();
    return refuse('test', failed.map(({ test, index }) => `test ${index + 1} failed: ${test.problem ?? 'no reason given'}`).join('; '), { codeHash });
  }
  if (!options.judgeAvailable(agent.id, 'creation')) {
    release();
    return refuse(
      'judge',
      `no judge model: set [emergent].judge_model in agent "${agent.name}"'s manifest or [default_model] in config.toml; without a judge every forge is refused`,
      { codeHash },
    );
  }
  let verdict: Verdict;
  try {
    verdict = boundedVerdict(
      await options.judge(agent.id, 'creation', { system: judgeSystemPrompt('creation'), prompt: judgeDocument(request, tests), signal, caller: agent }),
    );
  } catch (error) {
    release();
    return refuse('judge', `the judge could not review the tool (${messageOf(error)}); nothing was registered`, { codeHash });
  }
  if (!verdict.approved) {
    release();
    return refuse('judge', `the judge refused it${verdict.issues.length === 0 ? '' : `: ${verdict.issues.join('; ')}`}`, { verdict, codeHash });
  }
  // Tested and judged meanwhile, another tool of this name may have been shared or registered.
  const taken = [...live.values()].find(
    ({ record: other }) => other.name === request.name && other.status === 'active' && (other.tier === 'shared' || other.agentId === agent.id),
  );
  if (taken !== undefined) {
    release();
    const how = taken.record.tier === 'shared' ? `shared by agent "${taken.record.agentName}"` : `registered for agent "${agent.name}"`;
    return refuse('request', `a tool named "${request.name}" was ${how} while this one was being built; choose another name`, { codeHash });
  }
  // …and other forges of the agent may have filled its session's tools (several through doors at once).
  if (sessionToolCount(state, agent.id) >= settings.max_session_tools) {
    release();
    return refuse(
      'request',
      `agent "${agent.name}" reached its [emergent].max_session_tools (${settings.max_session_tools}) while this tool was being built; reset the session or promote one first`,
      { codeHash },
    );
  }
  record.verdicts = [{ role: 'creation', at: clock.now(), ...verdict }];
  // In `live` before the store is waited on, so a promotion to shared checking names sees it.
  const tool = admit(state, { record, request, code: request.implementation.mode === 'sandbox' ? request.implementation.code : undefined });
  tool.program = candidate.program;
  try {
    await store.forgedTools.put(record);
  } catch (error) {
    retireLive(state, tool);
    throw error;
  }
  await publishEvent(
    state,
    { ...record },
    { type: 'tool-forge', outcome: 'registered', reason: null, provenance: { ...provenanceOf(record, by), verdict, tests: tests.length } },
  );
  logger.info({ agentId: agent.id, tool: record.name, toolId: record.id }, `agent "${agent.name}" forged tool "${record.name}"`);
  return { ok: true, tool: toForgedToolView(record), verdict };
}
