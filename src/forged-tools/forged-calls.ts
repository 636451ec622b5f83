import { z } from 'zod';
import type { ForgedToolRecord, JsonObject, JsonValue, Tool, ToolAgent, ToolBox, ToolContext, ToolResult } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';
import { jsonDepthProblem, type SchemaCheck } from '../validation/index.ts';
import { type Candidate, type EngineState, type LiveTool, publishEvent, settingsOf } from './engine-state.ts';
import { FORGE_TOOL_NAME, type ForgeRequest } from './forge-request.ts';
import { withoutComments } from './judge.ts';
import { compileSchema } from './output-check.ts';
import { maybePromote } from './promotion.ts';
import { type ForgedRun, runCompose, runSandboxed, sandboxBridges } from './run-forged.ts';
import { compileSandboxProgram, type SandboxedProgram } from './sandbox.ts';

/** The largest output a sandboxed tool may return, in bytes of JSON. */
export const MAX_SANDBOX_OUTPUT_BYTES = 1_000_000;

/** What types a forged tool's input; its JSON Schema (draft-07 unless it says otherwise) checks it. */
const ANY_INPUT = z.record(z.string(), z.json());
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

/** One run of a tool: its input, and the agent it runs for (its toolbox, its signal, as the caller). */
export interface RunInput {
  input: JsonObject;
  toolbox: ToolBox;
  signal: AbortSignal;
  caller: ToolAgent;
}

/** A tool's output as the model sees it: JSON text, and the object as structured content. */
function resultOf(output: JsonValue): ToolResult {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return output !== null && typeof output === 'object' && !Array.isArray(output) ? { text, structured: output } : { text };
}

/** A sandbox tool's program, compiled on first use (again once disposed); a string says why there is none. */
async function programOf(state: EngineState, tool: Candidate): Promise<SandboxedProgram | string> {
  if (tool.program !== undefined && !tool.program.disposed) return tool.program;
  const { implementation } = tool.request;
  if (implementation.mode !== 'sandbox') return 'not a sandbox tool';
  // What the judge read is what runs: the code without its comments (the code can read its own
  // text, so a comment the judge never saw could carry data for it).
  const code = withoutComments(state.memorySource.get(tool.record.id) ?? implementation.code);
  const settings = settingsOf(state, tool.record);
  const program = await compileSandboxProgram(
    code,
    {
      timeoutMs: settings?.sandbox_timeout_ms ?? 5000,
      memoryMb: settings?.sandbox_memory_mb ?? 128,
      maxOutputBytes: MAX_SANDBOX_OUTPUT_BYTES,
    },
    { pool: state.sandboxPool },
  );
  for (const held of state.programs) if (held.disposed) state.programs.delete(held);
  state.programs.add(program);
  tool.program = program;
  return program;
}

/** Runs a tool once for the agent whose toolbox is given. */
export async function runOnce(state: EngineState, tool: Candidate, run: RunInput): Promise<ForgedRun> {
  const { input, toolbox, signal, caller } = run;
  const { implementation } = tool.request;
  if (implementation.mode === 'compose') return runCompose(implementation.steps, input, toolbox);
  const settings = settingsOf(state, tool.record);
  if (settings === undefined) return { ok: false, problem: `the agent that forged ${tool.record.name} is gone, and its sandbox settings with it` };
  const program = await programOf(state, tool);
  if (typeof program === 'string') return { ok: false, problem: program };
  const bridges = sandboxBridges(implementation.allowlist, settings, toolbox, (kind, reason) => {
    void publishEvent(
      state,
      { ...tool.record, agentId: caller.id, agentName: caller.name },
      { type: 'tool-sandbox-fail', outcome: kind, reason, provenance: { caller: caller.name, owner: tool.record.agentName } },
    );
  });
  return runSandboxed(program, input, bridges, signal);
}

/**
 * Checks a run's output: within MAX_JSON_DEPTH (a sandboxed tool's is checked as it leaves its
 * sandbox; a compose tool's is a tool's result), then against the declared schema; either
 * problem fails the run.
 */
export function checked(tool: Pick<LiveTool, 'checkOutput'>, run: ForgedRun): ForgedRun {
  if (!run.ok) return run;
  const tooDeep = jsonDepthProblem('the output', run.output);
  if (tooDeep !== undefined) return { ok: false, problem: tooDeep };
  if (tool.checkOutput === undefined) return run;
  const problem = tool.checkOutput(run.output);
  return problem === undefined ? run : { ok: false, problem: `the output does not match the tool's outputSchema: ${problem}` };
}

/** One call of an offered tool, as the tool runner makes it: run, checked, counted, audited on a fault. */
async function call(state: EngineState, tool: LiveTool, invocation: { input: JsonObject; context: ToolContext }): Promise<ToolResult> {
  const { input, context } = invocation;
  const { record } = tool;
  const { clock, store } = state.options;
  if (record.status !== 'active')
    return { text: `${record.name} is ${record.status}${record.statusReason === null ? '' : `: ${record.statusReason}`}`, isError: true };
  if (context.toolbox === undefined) return { text: `${record.name} cannot run here: it needs the tool runner`, isError: true };
  const started = performance.now();
  let run: ForgedRun;
  try {
    run = checked(tool, await runOnce(state, tool, { input, toolbox: context.toolbox, signal: context.signal, caller: context.agent }));
  } catch (error) {
    run = { ok: false, problem: messageOf(error) };
  }
  const duration = performance.now() - started;
  record.stats = { calls: record.stats.calls + 1, successes: record.stats.successes + (run.ok ? 1 : 0), totalMs: record.stats.totalMs + duration };
  record.updatedAt = clock.now();
  await store.forgedTools.recordCall(record.id, run.ok, duration, record.updatedAt);
  if (!run.ok) {
    if (run.fault !== undefined && run.fault !== 'thrown') {
      await publishEvent(
        state,
        { ...record, agentId: context.agent.id, agentName: context.agent.name },
        {
          type: 'tool-sandbox-fail',
          outcome: run.fault,
          reason: run.problem,
          provenance: { caller: context.agent.name, owner: record.agentName, codeHash: record.codeHash },
        },
      );
    }
    return { text: `${record.name} failed: ${run.problem}`, isError: true };
  }
  maybePromote(state, tool);
  return resultOf(run.output);
}

/** A face of a tool: to its own agent (granted by `forge_tool`), or to others (a shared tool). */
function toolOf(state: EngineState, tool: Pick<LiveTool, 'record' | 'request'>, face: { own: boolean; self: () => LiveTool }): Tool<never> {
  const { request } = tool;
  const forged: Tool<JsonObject> = {
    name: request.name,
    description: `[forged ${tool.record.mode} tool] ${request.description}`,
    ...(face.own ? { grantedBy: FORGE_TOOL_NAME } : {}),
    inputSchema: ANY_INPUT,
    jsonSchema: { $schema: DRAFT_07, ...request.inputSchema },
    requires: () => [],
    execute: (input, context) => call(state, face.self(), { input, context }),
  };
  return forged as unknown as Tool<never>;
}

/** A tool to offer: its record, its request, and the sandbox source to keep in memory when it is not stored. */
export interface Offered {
  record: ForgedToolRecord;
  request: ForgeRequest;
  code?: string | undefined;
}

/** Offers a tool here: its two faces built, its in-memory source kept when given. */
export function admit(state: EngineState, offered: Offered): LiveTool {
  const { record, request, code } = offered;
  let checkOutput: SchemaCheck | undefined;
  try {
    checkOutput = request.outputSchema === undefined ? undefined : compileSchema(request.outputSchema);
  } catch {
    checkOutput = () => 'its outputSchema is not a valid JSON Schema';
  }
  const holder: { tool?: LiveTool } = {};
  const self = (): LiveTool => holder.tool as LiveTool;
  const tool: LiveTool = {
    record,
    request,
    checkOutput,
    program: undefined,
    promotionTriedAt: 0,
    own: toolOf(state, { record, request }, { own: true, self }),
    other: toolOf(state, { record, request }, { own: false, self }),
  };
  holder.tool = tool;
  if (code !== undefined) state.memorySource.set(record.id, code);
  state.live.set(record.id, tool);
  return tool;
}
