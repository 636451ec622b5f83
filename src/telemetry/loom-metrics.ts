import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Kernel, KernelEvent } from '../kernel/index.ts';
import { type MeteredCall, observeModelCalls } from '../kernel/index.ts';
import { type CostCatalog, modelName } from '../models/index.ts';
import { observeStoreCommits } from '../store/index.ts';

/** An MCP server's connection as the metrics see it. */
export interface McpConnection {
  name: string;
  status: 'connecting' | 'connected' | 'failed';
}

/** What {@link createLoomMetrics} reads and listens to. */
export interface LoomMetricsSources {
  kernel: Pick<Kernel, 'events' | 'turnCounts' | 'approvals'>;
  /** Prices each kind of token (the daemon's catalog, its `[prices]` applied). */
  costs: CostCatalog;
  /** The MCP servers' connections, when the daemon connects any. */
  mcp?: { servers(): readonly McpConnection[] } | undefined;
}

/** The daemon's Prometheus metrics. */
export interface LoomMetrics {
  /** The registry, in Prometheus text format. */
  text(): Promise<string>;
  /** The text format's content type. */
  readonly contentType: string;
  readonly registry: Registry;
  /** Stops listening to the kernel and the ledger. */
  dispose(): void;
}

/** Turn durations: a one-line answer to a long tool-using turn. */
const TURN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Model call durations. */
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80];
/** Store commit durations: a WAL append on a local disk to a PostgreSQL round trip under load. */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
/** Tool call durations. */
const TOOL_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

const TURN_OUTCOMES: Readonly<Record<string, string>> = {
  'turn-finish': 'finished',
  'turn-refuse': 'refused',
  'turn-cancel': 'cancelled',
  'model-fail': 'model_error',
  'turn-fail': 'error',
};

const TOOL_OUTCOMES: Readonly<Record<string, string>> = {
  'tool-finish': 'ok',
  'tool-fail': 'error',
  'tool-deny': 'denied',
  'tool-reject': 'invalid',
  'tool-block': 'blocked',
  'tool-time-out': 'timeout',
};

const MCP_STATES = ['connecting', 'connected', 'failed'] as const;

/**
 * The daemon's metrics (docs/observability.md lists each), fed by the kernel's event bus (turns,
 * tool calls, scheduled wake-ups, package runs) and by the budget ledger's metered model calls (tokens, cost and
 * latency of every model call, retries and cut-off calls included), by the store's commits, and
 * read at each scrape (running and queued turns, pending approvals, MCP connections). In a cluster a node also hears the
 * events other nodes record, so turn and tool counts are the cluster's; model calls are this
 * node's own.
 */
export function createLoomMetrics(sources: LoomMetricsSources): LoomMetrics {
  const { kernel, costs } = sources;
  const registry = new Registry();
  const registers = [registry];

  const turns = new Counter({
    name: 'loom_turns_total',
    help: 'Turns by agent and how they ended (finished, refused, cancelled, model_error, error).',
    labelNames: ['agent', 'outcome'],
    registers,
  });
  const turnSeconds = new Histogram({
    name: 'loom_turn_duration_seconds',
    help: 'How long turns took, from the message to its end, by outcome.',
    labelNames: ['outcome'],
    buckets: TURN_BUCKETS,
    registers,
  });
  const modelCalls = new Counter({
    name: 'loom_model_calls_total',
    help: 'Model calls by agent, model and outcome (ok, cut_off, error, refused by a budget).',
    labelNames: ['agent', 'model', 'outcome'],
    registers,
  });
  const modelSeconds = new Histogram({
    name: 'loom_model_call_duration_seconds',
    help: 'How long model calls took, to their last streamed part, by model and outcome.',
    labelNames: ['model', 'outcome'],
    buckets: MODEL_BUCKETS,
    registers,
  });
  const tokens = new Counter({
    name: 'loom_tokens_total',
    help: 'Tokens of model calls by agent, model and kind: input (not from the prompt cache), cache_read, cache_write, output. The kinds add up to every token.',
    labelNames: ['agent', 'model', 'kind'],
    registers,
  });
  const cost = new Counter({
    name: 'loom_cost_usd_total',
    help: 'What model calls cost in US dollars, by agent, model and kind of token (as loom_tokens_total).',
    labelNames: ['agent', 'model', 'kind'],
    registers,
  });
  const toolCalls = new Counter({
    name: 'loom_tool_calls_total',
    help: 'Tool calls by tool and outcome (ok, error, denied, invalid, blocked, timeout).',
    labelNames: ['tool', 'outcome'],
    registers,
  });
  const toolSeconds = new Histogram({
    name: 'loom_tool_call_duration_seconds',
    help: 'How long tool calls that ran took, by tool.',
    labelNames: ['tool'],
    buckets: TOOL_BUCKETS,
    registers,
  });
  const commitSeconds = new Histogram({
    name: 'loom_store_commit_duration_seconds',
    help: "How long store transactions took from BEGIN to COMMIT (a turn's messages and usage, a spawn, a run's step), by store (sqlite, postgres).",
    labelNames: ['store'],
    buckets: COMMIT_BUCKETS,
    registers,
  });
  const scheduleRuns = new Counter({
    name: 'loom_schedule_runs_total',
    help: "Due wake-ups by agent (or package) and outcome: agents' scheduled wake-ups as they end (completed, failed, interrupted, skipped; each missed one counted), packages' runs (the run's status, skipped, missed).",
    labelNames: ['agent', 'outcome'],
    registers,
  });
  new Gauge({
    name: 'loom_running_turns',
    help: 'Turns running now, on every agent and session.',
    registers,
    collect() {
      this.set(kernel.turnCounts().running);
    },
  });
  new Gauge({
    name: 'loom_queued_turns',
    help: "Turns accepted and waiting for an earlier turn of their agent to end (the turn queue's depth).",
    registers,
    collect() {
      this.set(kernel.turnCounts().queued);
    },
  });
  new Gauge({
    name: 'loom_pending_approvals',
    help: "Tool calls waiting for a person's approval.",
    registers,
    async collect() {
      this.set((await kernel.approvals.list('pending')).length);
    },
  });
  const mcp = sources.mcp;
  if (mcp !== undefined) {
    new Gauge({
      name: 'loom_mcp_server_status',
      help: "Each configured MCP server's connection: 1 for its current status (connecting, connected, failed), 0 for the others.",
      labelNames: ['server', 'status'],
      registers,
      collect() {
        this.reset();
        for (const server of mcp.servers()) for (const status of MCP_STATES) this.set({ server: server.name, status }, server.status === status ? 1 : 0);
      },
    });
  }

  const onEvent = (event: KernelEvent): void => {
    const turnOutcome = TURN_OUTCOMES[event.type];
    if (turnOutcome !== undefined && 'durationMs' in event) {
      turns.inc({ agent: event.name, outcome: turnOutcome });
      turnSeconds.observe({ outcome: turnOutcome }, event.durationMs / 1000);
      return;
    }
    const toolOutcome = TOOL_OUTCOMES[event.type];
    if (toolOutcome !== undefined && 'tool' in event) {
      toolCalls.inc({ tool: event.tool, outcome: toolOutcome });
      if ('durationMs' in event) toolSeconds.observe({ tool: event.tool }, event.durationMs / 1000);
      return;
    }
    if (event.type === 'schedule-run-finish') scheduleRuns.inc({ agent: event.name, outcome: event.outcome }, event.count);
    else if (event.type === 'package-run-finish') scheduleRuns.inc({ agent: event.name, outcome: event.status });
    else if (event.type === 'package-skip') scheduleRuns.inc({ agent: event.name, outcome: 'skipped' });
    else if (event.type === 'package-miss') scheduleRuns.inc({ agent: event.name, outcome: 'missed' }, event.count);
  };

  const onModelCall = (call: MeteredCall): void => {
    const agent = call.agent?.name ?? '';
    const model = modelName(call.target);
    const outcome = call.outcome === 'cut-off' ? 'cut_off' : call.outcome;
    modelCalls.inc({ agent, model, outcome });
    if (call.outcome !== 'refused') modelSeconds.observe({ model, outcome }, call.durationMs / 1000);
    const { spent } = call;
    const read = spent.cacheReadTokens ?? 0;
    const write = spent.cacheWriteTokens ?? 0;
    const kinds = { input: Math.max(0, spent.inputTokens - read - write), cache_read: read, cache_write: write, output: spent.outputTokens };
    for (const [kind, count] of Object.entries(kinds)) {
      if (count <= 0) continue;
      tokens.inc({ agent, model, kind }, count);
      const usage =
        kind === 'output'
          ? { outputTokens: count }
          : kind === 'input'
            ? { inputTokens: count }
            : kind === 'cache_read'
              ? { inputTokens: count, cacheReadTokens: count }
              : { inputTokens: count, cacheWriteTokens: count };
      const price = costs.estimateCost(call.target.provider, call.target.model, usage).costUsd;
      if (price > 0) cost.inc({ agent, model, kind }, price);
    }
  };

  const unsubscribe = kernel.events.subscribe(onEvent);
  const unobserve = observeModelCalls(onModelCall);
  const unobserveCommits = observeStoreCommits((commit) => commitSeconds.observe({ store: commit.store }, commit.durationMs / 1000));
  return {
    text: () => registry.metrics(),
    contentType: registry.contentType,
    registry,
    dispose() {
      unsubscribe();
      unobserve();
      unobserveCommits();
    },
  };
}
