import { performance } from 'node:perf_hooks';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool } from 'ai';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const TURNS = 2000;
/** Turns rotate over this many agents, so no session grows past a realistic length. */
const AGENTS = 50;

async function measureKernelTurns(withTool: boolean): Promise<number[]> {
  const model = createInstantModel(withTool ? { toolName: 'agent_list' } : {});
  const bench = await openInstantBenchKernel(model);
  try {
    for (let index = 0; index < AGENTS; index += 1) {
      const text = `name = "turner-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["agent_list"]\n`;
      await bench.kernel.spawn(parseManifest(text, { source: 'bench.toml' }).manifest);
    }
    const durations: number[] = [];
    for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
      const started = performance.now();
      await bench.kernel.send(`turner-${turn % AGENTS}`, 'hello');
      if (turn >= WARMUP) durations.push(performance.now() - started);
    }
    return durations;
  } finally {
    await bench.dispose();
  }
}

/**
 * The same conversations through the bare AI SDK: 50 of them, each growing by the same messages
 * a Loom session grows by, so both sides send the model the same history. Nothing is persisted
 * or checked. With `singlePrompt`, every call sends just "hello" (the cheapest possible call).
 */
async function measureBareTurns(withTool: boolean, singlePrompt = false): Promise<number[]> {
  const model = createInstantModel(withTool ? { toolName: 'agent_list' } : {});
  const tools = { agent_list: tool({ description: 'List agents', inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: () => Promise.resolve('none') }) };
  const conversations: ModelMessage[][] = Array.from({ length: AGENTS }, () => []);
  const durations: number[] = [];
  for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
    const history = conversations[turn % AGENTS] ?? [];
    const started = performance.now();
    history.push({ role: 'user', content: 'hello' });
    // The bare SDK's own multi-step loop runs the tool.
    const result = await generateText({
      model,
      ...(singlePrompt ? { prompt: 'hello' } : { messages: history }),
      maxRetries: 0,
      ...(withTool ? { tools, stopWhen: stepCountIs(3) } : {}),
    });
    if (!singlePrompt) history.push(...result.response.messages);
    if (turn >= WARMUP) durations.push(performance.now() - started);
  }
  return durations;
}

async function compare(name: string, withTool: boolean): Promise<Record<string, unknown>> {
  const single = summarize(await measureBareTurns(withTool, true));
  const bare = summarize(await measureBareTurns(withTool));
  const loom = summarize(await measureKernelTurns(withTool));
  return {
    bench: name,
    p50_ms: loom.p50_ms,
    p99_ms: loom.p99_ms,
    ops_per_s: loom.ops_per_s,
    samples: loom.samples,
    bare_generate_text_p50_ms: bare.p50_ms,
    bare_generate_text_ops_per_s: bare.ops_per_s,
    ratio_p50_vs_bare: round(loom.p50_ms / bare.p50_ms),
    bare_single_prompt_p50_ms: single.p50_ms,
    ratio_p50_vs_single_prompt: round(loom.p50_ms / single.p50_ms),
    target_ratio: 3,
    target_ops_per_s: 2000,
    includes: 'quota check, dispatch, session load and save, loop with session repair, usage record and cost, in a file-backed SQLite store; bare = the same conversations through generateText alone',
  };
}

/** A full durable kernel turn with an in-process model that answers at once, against bare generateText. */
export const turnBench = (): Promise<Record<string, unknown>> => compare('turn', false);

/** The same with one tool call per turn (through the tool runner's checks). */
export const toolTurnBench = (): Promise<Record<string, unknown>> => compare('tool-turn', true);
