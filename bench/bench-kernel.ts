import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSystemClock } from '../src/clock/index.ts';
import { type AgentRuntime, createUuidGenerator, type Kernel } from '../src/kernel/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { openSqliteStore, type SqliteStore } from '../src/store/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { BUILTIN_TOOLS } from '../src/tools/index.ts';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { buildKernel } from '../test/support/test-kernel.ts';

/** A kernel over a fresh SQLite file in a temporary folder, removed by `dispose`. */
export interface BenchKernel {
  kernel: Kernel;
  store: SqliteStore;
  databasePath: string;
  dispose(): Promise<void>;
}

/**
 * Opens (and boots) a kernel on the database at `databasePath`, or on a new temporary one; with
 * `resume`, as a daemon boots: the turns its journal holds as running resume.
 */
export async function openBenchKernel(databasePath?: string, runtime?: AgentRuntime, options: { resume?: boolean } = {}): Promise<BenchKernel> {
  const dir = databasePath === undefined ? await mkdtemp(join(tmpdir(), 'loom-bench-')) : undefined;
  const path = databasePath ?? join(dir ?? '', 'loom.db');
  const store = openSqliteStore({ path });
  const kernel = buildKernel({
    store,
    clock: createSystemClock(),
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    ...(runtime === undefined ? {} : { runtime }),
    ...(options.resume === true ? { resumeBackgroundWork: true } : {}),
  });
  await kernel.boot();
  return {
    kernel,
    store,
    databasePath: path,
    dispose: async () => {
      await kernel.shutdown();
      await store.close();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A kernel on a new temporary database (or on `databasePath`, e.g. `:memory:`) whose agents all
 * run on `model` (an in-process model: no provider, no network).
 */
export function openInstantBenchKernel(model: LanguageModelV4, databasePath?: string, options: { resume?: boolean } = {}): Promise<BenchKernel> {
  return openBenchKernel(
    databasePath,
    {
      resolver: { resolve: () => model },
      costs: createCostCatalog(),
      tools: BUILTIN_TOOLS,
      env: {},
      workspaceOf: (agent) => `/tmp/loom-bench-workspaces/${agent.name}`,
    },
    options,
  );
}

/** A realistic manifest: model, fallback, quotas, a dozen capability patterns. */
export function benchManifest(name: string): string {
  return `name = "${name}"
description = "benchmark agent"
tags = ["bench"]

[model]
provider = "anthropic"
model = "claude-sonnet-4-20250514"
api_key_env = "ANTHROPIC_API_KEY"

[[fallback_models]]
provider = "groq"
model = "llama-3.3-70b-versatile"

[resources]
max_tokens_per_hour = 100000

[capabilities]
tools = ["web_fetch", "file_read", "memory_store", "memory_recall"]
memory_read = ["*"]
memory_write = ["self.*"]
network = ["*.wikipedia.org", "api.openai.com:443"]
file_read = ["/data/reports/*"]
agent_message = ["summarizer"]
llm_max_tokens = 4000
`;
}
