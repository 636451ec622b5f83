import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool } from 'ai';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const TURNS = 2000;
/** Turns rotate over this many agents, so no session grows past a realistic length. */
const AGENTS = 50;
/** Messages a long session starts with. */
const LONG_SESSION = 200;

/** A session of `length` messages, as many user and assistant turns. */
function history(length: number): ModelMessage[] {
  return Array.from({ length }, (_, index): ModelMessage => (index % 2 === 0 ? { role: 'user', content: `question ${index / 2}: what is next?` } : { role: 'assistant', content: `answer ${(index - 1) / 2}: this, then that.` }));
}

/** The heap in use after a full collection. */
const collect = ((): (() => number) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    gc();
    return process.memoryUsage().heapUsed;
  };
})();

/**
 * Durable kernel turns, rotating over 50 agents whose sessions start with `prefill` messages.
 * Also measures the heap the kernel holds per message of the sessions it keeps.
 */
async function measureKernelTurns(withTool: boolean, prefill = 0, databasePath?: string): Promise<{ durations: number[]; heapPerMessage: number }> {
  const model = createInstantModel(withTool ? { toolName: 'agent_list' } : {});
  const bench = await openInstantBenchKernel(model, databasePath);
  try {
    const heapBefore = collect();
    for (let index = 0; index < AGENTS; index += 1) {
      const text = `name = "turner-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["agent_list"]\n`;
      const agent = await bench.kernel.spawn(parseManifest(text, { source: 'bench.toml' }).manifest);
      if (prefill > 0) await bench.store.sessions.save({ id: agent.session_id, agentId: agent.id, messages: history(prefill) as never[], createdAt: 0, updatedAt: 0 });
    }
    const durations: number[] = [];
    for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
      const started = performance.now();
      await bench.kernel.send(`turner-${turn % AGENTS}`, 'hello');
      if (turn >= WARMUP) durations.push(performance.now() - started);
    }
    let messages = 0;
    for (let index = 0; index < AGENTS; index += 1) messages += (await bench.store.sessions.get(bench.kernel.get(`turner-${index}`).session_id))?.messages.length ?? 0;
    return { durations, heapPerMessage: (collect() - heapBefore) / messages };
  } finally {
    await bench.dispose();
  }
}

/**
 * The same conversations through the bare AI SDK: 50 of them, each growing by the same messages
 * a Loom session grows by, so both sides send the model the same history. Nothing is persisted
 * or checked. With `singlePrompt`, every call sends just "hello" (the cheapest possible call).
 */
async function measureBareTurns(withTool: boolean, singlePrompt = false, prefill = 0): Promise<number[]> {
  const model = createInstantModel(withTool ? { toolName: 'agent_list' } : {});
  // The same answer Loom's agent_list gives the kernel's turners, so both sides carry the same history.
  const listed = Array.from({ length: AGENTS }, (_, index) => `turner-${index} (running)`).join('\n');
  const tools = { agent_list: tool({ description: 'List agents', inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: () => Promise.resolve(listed) }) };
  const conversations: ModelMessage[][] = Array.from({ length: AGENTS }, () => history(prefill));
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
  const loom = summarize((await measureKernelTurns(withTool)).durations);
  // The same turns on a SQLite database in memory: what the commit's writes to the file cost.
  const memory = summarize((await measureKernelTurns(withTool, 0, ':memory:')).durations);
  return {
    bench: name,
    p50_ms: loom.p50_ms,
    p99_ms: loom.p99_ms,
    ops_per_s: loom.ops_per_s,
    samples: loom.samples,
    bare_generate_text_p50_ms: bare.p50_ms,
    bare_generate_text_ops_per_s: bare.ops_per_s,
    ratio_p50_vs_bare: round(loom.p50_ms / bare.p50_ms),
    in_memory_store_p50_ms: memory.p50_ms,
    in_memory_store_ratio_p50_vs_bare: round(memory.p50_ms / bare.p50_ms),
    bare_single_prompt_p50_ms: single.p50_ms,
    ratio_p50_vs_single_prompt: round(loom.p50_ms / single.p50_ms),
    target_ratio: withTool ? 3 : 2,
    target_ops_per_s: 2000,
    includes: 'quota check, dispatch, session load and save, loop with session repair, usage record and cost, in a file-backed SQLite store; bare = the same conversations through generateText alone',
  };
}

/** A full durable kernel turn with an in-process model that answers at once, against bare generateText. */
export const turnBench = (): Promise<Record<string, unknown>> => compare('turn', false);

/** The same with one tool call per turn (through the tool runner's checks). */
export const toolTurnBench = (): Promise<Record<string, unknown>> => compare('tool-turn', true);

/**
 * Does a turn cost more on a long session? The same durable turns on sessions that start empty and
 * on sessions that start with 200 messages, each against bare generateText on the same histories,
 * in one run: Loom's own share of a turn (its p50 less the bare call's) should not grow with the
 * session, beyond what the model call itself does. Also the heap the kernel holds per message
 * of the sessions it keeps.
 */
export async function longSessionTurnBench(): Promise<Record<string, unknown>> {
  const bareShort = summarize(await measureBareTurns(false));
  const loomShort = summarize((await measureKernelTurns(false)).durations);
  const bareLong = summarize(await measureBareTurns(false, false, LONG_SESSION));
  const long = await measureKernelTurns(false, LONG_SESSION);
  const loomLong = summarize(long.durations);
  const overheadShort = loomShort.p50_ms - bareShort.p50_ms;
  const overheadLong = loomLong.p50_ms - bareLong.p50_ms;
  return {
    bench: 'turn-long-session',
    session_messages_at_start: LONG_SESSION,
    p50_ms: loomLong.p50_ms,
    p99_ms: loomLong.p99_ms,
    bare_generate_text_p50_ms: bareLong.p50_ms,
    ratio_p50_vs_bare: round(loomLong.p50_ms / bareLong.p50_ms),
    short_session_p50_ms: loomShort.p50_ms,
    short_session_bare_p50_ms: bareShort.p50_ms,
    loom_share_short_ms: round(overheadShort),
    loom_share_long_ms: round(overheadLong),
    loom_share_growth: round(overheadLong / overheadShort),
    heap_bytes_per_stored_message: Math.round(long.heapPerMessage),
    target_loom_share_growth: 1.2,
    includes: 'the turn bench on sessions that start with 200 messages; loom share = Loom p50 less bare generateText p50 on the same histories',
  };
}
