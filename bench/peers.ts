// `npm run bench -- peers`: Loom's durable `turn` and `tool-turn` beside agent frameworks that
// persist nothing (the bare AI SDK, OpenAI Agents JS, VoltAgent, Mastra), on the same
// conversations and the same instant in-process model, in one run. The peers are pinned in
// bench/peers/package.json and installed into bench/peers/node_modules (git-ignored) the first
// time this runs; nothing else in the project needs them.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool } from 'ai';
import { createInstantModel } from './instant-model.ts';
import { loadPeer } from './peers/load.ts';
import { round, summarize } from './stats.ts';
import { measureKernelTurns } from './turn.ts';

/** Turns before measuring, and measured, per framework and kind of turn (as in the issue). */
const WARMUP = 20;
const TURNS = 1000;
/** Conversations the turns rotate over, as Loom's turns rotate over agents. */
const CONVERSATIONS = 50;
/** The peers, pinned in bench/peers/package.json. */
const PEER_PACKAGES = ['ai', '@openai/agents', '@voltagent/core', '@mastra/core', 'zod'] as const;
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));
const PROJECT_DIR = fileURLToPath(new URL('../', import.meta.url));
const LOOM_VERSION = (JSON.parse(readFileSync(join(PROJECT_DIR, 'package.json'), 'utf8')) as { version: string }).version;
/** The longest the first install may take. */
const INSTALL_TIMEOUT_MS = 600_000;
/** What the tool answers: the same list Loom's `agent_list` gives the bench's agents. */
const LISTED = Array.from({ length: 50 }, (_, index) => `turner-${index} (running)`).join('\n');
const INSTRUCTIONS = 'You are a helpful agent.';

/** One turn of conversation `conversation` (its history kept by the driver; a new number starts a new one). */
type Turn = (conversation: number) => Promise<void>;
/** What a peer needs to run its turns: the framework's own agent on the instant model. */
type Driver = (withTool: boolean) => Promise<Turn>;

/** Installs the peers into bench/peers/node_modules when one is missing (npm's output on stderr). */
function ensurePeers(): void {
  const missing = PEER_PACKAGES.filter((name) => !existsSync(join(PEERS_DIR, 'node_modules', name, 'package.json')));
  if (missing.length === 0) return;
  console.error(`peers: installing ${missing.join(', ')} into ${join(PEERS_DIR, 'node_modules')} (once)`);
  const result = spawnSync('npm', ['install', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], { stdio: ['ignore', 2, 2], timeout: INSTALL_TIMEOUT_MS });
  if (result.status !== 0)
    throw new Error(`peers: npm install --prefix ${PEERS_DIR} failed (status ${result.status ?? result.signal ?? 'unknown'}); run it by hand to see why`);
}

function versionOf(name: string, root = PEERS_DIR): string {
  const manifest = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/** The instant model, with the tool call when the turn has one. */
const instant = (withTool: boolean) => createInstantModel(withTool ? { toolName: 'agent_list' } : {});

/** The bare AI SDK (the project's own `ai`): generateText and its own loop running the tool. */
const bareSdk: Driver = (withTool) => {
  const model = instant(withTool);
  const tools = {
    agent_list: tool({ description: 'List agents', inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: () => Promise.resolve(LISTED) }),
  };
  const histories: ModelMessage[][] = [];
  return Promise.resolve(async (conversation) => {
    const history = (histories[conversation] ??= []);
    history.push({ role: 'user', content: 'hello' });
    const result = await generateText({
      model,
      system: INSTRUCTIONS,
      messages: history,
      maxRetries: 0,
      ...(withTool ? { tools, stopWhen: stepCountIs(3) } : {}),
    });
    history.push(...result.response.messages);
  });
};

interface Zod {
  z: { object(shape: Record<string, never>): unknown };
}

/** An Agents JS output item, as much as the bench builds. */
type AgentItem = Record<string, unknown>;

interface OpenAIAgents {
  Agent: new (options: Record<string, unknown>) => unknown;
  Runner: new (options: Record<string, unknown>) => { run(agent: unknown, input: AgentItem[]): Promise<{ history: AgentItem[] }> };
  Usage: new (options: Record<string, number>) => unknown;
  tool(options: Record<string, unknown>): unknown;
  setTracingDisabled(disabled: boolean): void;
}

/**
 * OpenAI Agents JS `Runner.run`, on a `Model` of its own interface that answers as the instant
 * model does (Agents JS speaks its Responses items, not the AI SDK's model interface).
 */
const openaiAgents: Driver = async (withTool) => {
  const agents = (await loadPeer('@openai/agents')) as OpenAIAgents;
  const { z } = (await loadPeer('zod')) as Zod;
  agents.setTracingDisabled(true);
  let calls = 0;
  const model = {
    getResponse(request: { input: string | AgentItem[] }) {
      calls += 1;
      const last = Array.isArray(request.input) ? request.input.at(-1) : undefined;
      const output: AgentItem[] =
        withTool && last?.['type'] !== 'function_call_result'
          ? [{ type: 'function_call', callId: `call-${calls}`, name: 'agent_list', arguments: '{}', status: 'completed' }]
          : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }];
      return Promise.resolve({
        usage: new agents.Usage({ requests: 1, inputTokens: 20, outputTokens: 5, totalTokens: 25 }),
        output,
        responseId: `response-${calls}`,
      });
    },
    getStreamedResponse(): never {
      throw new Error('the bench runs no streamed turns');
    },
  };
  const tools = withTool
    ? [agents.tool({ name: 'agent_list', description: 'List agents', parameters: z.object({}), execute: () => Promise.resolve(LISTED) })]
    : [];
  const agent = new agents.Agent({ name: 'peer', instructions: INSTRUCTIONS, model, tools });
  const runner = new agents.Runner({ tracingDisabled: true });
  const histories: AgentItem[][] = [];
  return async (conversation) => {
    const result = await runner.run(agent, [...(histories[conversation] ?? []), { role: 'user', content: 'hello' }]);
    histories[conversation] = result.history;
  };
};

interface VoltAgent {
  Agent: new (options: Record<string, unknown>) => {
    generateText(input: unknown[], options: Record<string, unknown>): Promise<{ response: { messages: unknown[] } }>;
  };
  createTool(options: Record<string, unknown>): unknown;
}

/**
 * VoltAgent `generateText`, without memory (so it persists nothing, as the others), on the
 * instant model as an AI SDK 6 model (VoltAgent 2.10 runs on `ai` 6: the same answers, model
 * interface v3).
 */
const voltAgent: Driver = async (withTool) => {
  const volt = (await loadPeer('@voltagent/core')) as VoltAgent;
  const { z } = (await loadPeer('zod')) as Zod;
  const model = { ...instant(withTool), specificationVersion: 'v3' };
  const tools = withTool
    ? [volt.createTool({ name: 'agent_list', description: 'List agents', parameters: z.object({}), execute: () => Promise.resolve(LISTED) })]
    : [];
  const agent = new volt.Agent({ name: 'peer', instructions: INSTRUCTIONS, model, tools, memory: false });
  const histories: unknown[][] = [];
  return async (conversation) => {
    const history = (histories[conversation] ??= []);
    history.push({ role: 'user', content: 'hello' });
    const result = await agent.generateText(history, { maxSteps: 3 });
    history.push(...result.response.messages);
  };
};

interface MastraAgent {
  Agent: new (options: Record<string, unknown>) => {
    generate(input: unknown[], options: Record<string, unknown>): Promise<{ text: string; response?: { messages?: unknown[] } }>;
  };
}
interface MastraTools {
  createTool(options: Record<string, unknown>): unknown;
}

/** Mastra `Agent.generate`, without memory or storage, on the instant model (AI SDK 7's model interface, which Mastra takes). */
const mastra: Driver = async (withTool) => {
  const { Agent } = (await loadPeer('@mastra/core/agent')) as MastraAgent;
  const mastraTools = (await loadPeer('@mastra/core/tools')) as MastraTools;
  const { z } = (await loadPeer('zod')) as Zod;
  const tools = withTool
    ? {
        agent_list: mastraTools.createTool({ id: 'agent_list', description: 'List agents', inputSchema: z.object({}), execute: () => Promise.resolve(LISTED) }),
      }
    : {};
  const agent = new Agent({ id: 'peer', name: 'peer', instructions: INSTRUCTIONS, model: instant(withTool), tools });
  const histories: unknown[][] = [];
  return async (conversation) => {
    const history = (histories[conversation] ??= []);
    history.push({ role: 'user', content: 'hello' });
    const result = await agent.generate(history, { maxSteps: 3 });
    history.push(...(result.response?.messages ?? [{ role: 'assistant', content: result.text }]));
  };
};

/**
 * p50 and p99 of `TURNS` turns after `WARMUP`, rotating over the conversations, or with `fresh`
 * each in a conversation of its own (one user message: no history).
 */
async function measure(turn: Turn, fresh = false): Promise<{ p50_ms: number; p99_ms: number }> {
  const durations: number[] = [];
  for (let index = 0; index < WARMUP + TURNS; index += 1) {
    const started = performance.now();
    await turn(fresh ? index : index % CONVERSATIONS);
    if (index >= WARMUP) durations.push(performance.now() - started);
  }
  const { p50_ms, p99_ms } = summarize(durations);
  return { p50_ms, p99_ms };
}

/**
 * The peers' text and tool turns beside Loom's durable ones, measured in one run, and the table
 * the issue quotes. Each framework's turns run one after another in this process (bounded:
 * ~2 × 1,020 turns per row).
 */
export async function peersBench(): Promise<Record<string, unknown>> {
  ensurePeers();
  // The AI SDK (6 and 7) prints a warning per call on some inputs (Mastra's system messages):
  // writing thousands to the terminal would be measured as the framework's time.
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
  type Figures = { p50_ms: number; p99_ms: number };
  const rows: { name: string; version: string; call: string; persists: string; text: Figures; tool: Figures; fresh?: { text: Figures; tool: Figures } }[] = [];
  const peers: { name: string; version: string; call: string; driver: Driver }[] = [
    { name: 'bare AI SDK', version: versionOf('ai', PROJECT_DIR), call: 'generateText', driver: bareSdk },
    { name: 'OpenAI Agents JS', version: versionOf('@openai/agents'), call: 'Runner.run', driver: openaiAgents },
    { name: 'VoltAgent', version: versionOf('@voltagent/core'), call: 'generateText', driver: voltAgent },
    { name: 'Mastra', version: versionOf('@mastra/core'), call: 'Agent.generate', driver: mastra },
  ];
  // The copy Mastra bundles writes its warning about system messages with `console.warn` itself,
  // whatever that switch says: that warning, dropped while the peers run.
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] !== 'string' || !args[0].startsWith('AI SDK Warning: System messages')) warn(...args);
  };
  try {
    for (const peer of peers) {
      const text = await measure(await peer.driver(false));
      const withTool = await measure(await peer.driver(true));
      const fresh = { text: await measure(await peer.driver(false), true), tool: await measure(await peer.driver(true), true) };
      rows.push({ name: peer.name, version: peer.version, call: peer.call, persists: 'no', text, tool: withTool, fresh });
    }
  } finally {
    console.warn = warn;
  }
  const loomText = await measureKernelTurns(false, { warmup: WARMUP, turns: TURNS, floor: true });
  const loomTool = await measureKernelTurns(true, { warmup: WARMUP, turns: TURNS, floor: true });
  const pick = (durations: number[]) => {
    const { p50_ms, p99_ms } = summarize(durations);
    return { p50_ms, p99_ms };
  };
  const loomFresh = {
    text: pick((await measureKernelTurns(false, { warmup: WARMUP, turns: TURNS, fresh: true })).durations),
    tool: pick((await measureKernelTurns(true, { warmup: WARMUP, turns: TURNS, fresh: true })).durations),
  };
  rows.push({
    name: 'Loom',
    version: LOOM_VERSION,
    call: 'turn / tool-turn',
    persists: 'yes, SQLite',
    text: pick(loomText.durations),
    tool: pick(loomTool.durations),
    fresh: loomFresh,
  });
  rows.push({
    name: "Loom's durable floor",
    version: '',
    call: "bare SDK + the turn's commits",
    persists: '-',
    text: pick(loomText.durableFloor),
    tool: pick(loomTool.durableFloor),
  });
  const agentsRow = rows.find((row) => row.name === 'OpenAI Agents JS');
  const loomRow = rows.find((row) => row.name === 'Loom');
  const table = [
    '| | text turn p50 | tool turn p50 | the same, no history | persists the turn? |',
    '|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.name}${row.version === '' ? '' : ` ${row.version}`} \`${row.call}\` | ${row.text.p50_ms.toFixed(2)} ms | ${row.tool.p50_ms.toFixed(2)} ms | ${row.fresh === undefined ? '-' : `${row.fresh.text.p50_ms.toFixed(2)} / ${row.fresh.tool.p50_ms.toFixed(2)} ms`} | ${row.persists} |`,
    ),
  ].join('\n');
  console.error(table);
  return {
    bench: 'peers',
    rows,
    table,
    tool_turn_vs_openai_agents: agentsRow === undefined || loomRow === undefined ? null : round(loomRow.tool.p50_ms / agentsRow.tool.p50_ms),
    tool_turn_vs_openai_agents_no_history:
      agentsRow?.fresh === undefined || loomRow?.fresh === undefined ? null : round(loomRow.fresh.tool.p50_ms / agentsRow.fresh.tool.p50_ms),
    target: 'Loom tool-turn p50 <= OpenAI Agents JS tool turn p50 in the same run (ratio <= 1)',
    turns: {
      warmup: WARMUP,
      measured: TURNS,
      conversations: CONVERSATIONS,
      fresh: 'the same turns, each in a new conversation (one user message); for Loom, on a session reset before the turn (not measured)',
    },
    notes: [
      'one process, one framework after another, on the same instant in-process model (bench/instant-model.ts; AI SDK 6 model interface for VoltAgent, a Model of its own interface for OpenAI Agents JS) answering at once; a tool turn is two model calls and one call of agent_list',
      "Loom's turns are durable kernel turns on a SQLite file (bench/turn.ts); the peers persist nothing; the durable floor is the bare SDK with the turn's rows committed by node:sqlite alone",
      'the machine may be shared: compare ratios within one run',
    ],
  };
}
