import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClusterView } from '../../src/contracts/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { packageConfigToml } from '../packages/support.ts';
import { startTestPostgres, type TestPostgres } from '../support/postgres-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { type ScriptStep, startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.ts';

// Daemons in separate processes, each with its own LOOM_HOME, for the cluster tests.

export { waitFor };

const bin = join(import.meta.dirname, '../../bin/loom.js');

/** A daemon process. */
export interface DaemonNode {
  name: string;
  home: string;
  child: ChildProcess;
  /** Its API, once it answers. */
  url: string;
  /** What it printed so far (stdout and stderr, JSON log lines). */
  output: () => string;
  exited: Promise<number | null>;
}

/** `GET /api/cluster` on a node, failing when it does not answer 200 within `ms`. */
export async function clusterOf(node: Pick<DaemonNode, 'url'>, ms = 10_000): Promise<ClusterView> {
  const response = await fetch(`${node.url}/api/cluster`, { signal: AbortSignal.timeout(ms) });
  if (!response.ok) throw new Error(`GET /api/cluster answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as ClusterView;
}

/** How {@link DaemonNodes.start} starts a daemon. */
export interface DaemonNodeOptions {
  /** `[cluster]` beside `node_name`. */
  cluster?: Record<string, unknown>;
  /** The scripted model server of this node's aliases, when not the one the nodes were made with. */
  modelUrl?: string;
  /** `[scheduler]`, e.g. `{ catch_up: 'skip' }`. */
  scheduler?: Record<string, unknown>;
}

/** Starts daemons under `dir` (one home per name) and stops every one it started. */
export class DaemonNodes {
  readonly #dir: string;
  readonly #modelUrl: string;
  readonly #children: ChildProcess[] = [];
  /** Every daemon started, so a test can print the logs of its nodes when it fails. */
  readonly started: DaemonNode[] = [];

  /** `modelUrl`: the scripted model server the package test config's aliases point at. */
  constructor(dir: string, modelUrl: string) {
    this.#dir = dir;
    this.#modelUrl = modelUrl;
  }

  /** Spawns `loom start --foreground` with the home `<dir>/<name>` (on `databaseUrl` when given), without waiting. */
  spawn(name: string, databaseUrl: string | undefined): Omit<DaemonNode, 'url'> {
    const home = join(this.#dir, name);
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOME: this.#dir,
      LOOM_HOME: home,
      OPENAI_API_KEY: 'sk-test',
      LOOM_LOG_FORMAT: 'json',
    };
    if (databaseUrl !== undefined) env['LOOM_DATABASE_URL'] = databaseUrl;
    const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#children.push(child);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { name, home, child, output: () => output, exited };
  }

  /** Starts a daemon whose home has the package test config and `[cluster] node_name = name`, and waits until it answers. */
  async start(name: string, databaseUrl: string | undefined, options: DaemonNodeOptions = {}): Promise<DaemonNode> {
    const home = join(this.#dir, name);
    await mkdir(home, { recursive: true });
    await writeFile(
      join(home, 'config.toml'),
      packageConfigToml(options.modelUrl ?? this.#modelUrl, {
        cluster: { node_name: name, ...options.cluster },
        ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
      }),
    );
    const node = this.spawn(name, databaseUrl);
    const url = await waitFor(`node "${name}" to answer`, async () => {
      if (node.child.exitCode !== null) throw new Error(`node "${name}" exited: ${node.output()}`);
      const info = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { url: string; pid: number };
      return info.pid === node.child.pid && (await fetch(`${info.url}/api/health`, { signal: AbortSignal.timeout(2_000) })).ok ? info.url : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${node.output()}`);
    });
    const started = { ...node, url };
    this.started.push(started);
    return started;
  }

  /** Stops a daemon with SIGTERM and answers its exit code (SIGKILLed after 15 s: null). */
  async stop(node: Omit<DaemonNode, 'url'>): Promise<number | null> {
    if (node.child.exitCode !== null || node.child.signalCode !== null) return node.child.exitCode;
    node.child.kill('SIGTERM');
    const code = await Promise.race([node.exited, delay(15_000).then(() => 'still running' as const)]);
    if (code !== 'still running') return code;
    node.child.kill('SIGKILL');
    await node.exited;
    return null;
  }

  /** SIGKILLs every daemon still running and waits for them to exit. */
  async stopAll(): Promise<void> {
    const running = this.#children.filter((child) => child.exitCode === null && child.signalCode === null);
    for (const child of running) child.kill('SIGKILL');
    await Promise.all(running.map((child) => new Promise((resolve) => child.once('exit', resolve))));
  }
}

/** What a file of daemon cluster tests runs on: a temporary folder, a scripted model, a PostgreSQL server and the daemons. */
export interface DaemonCluster {
  dir: Awaited<ReturnType<typeof makeTempDir>>;
  model: ScriptedModelServer;
  postgres: TestPostgres;
  nodes: DaemonNodes;
  /** Kills the daemons, then stops the servers and removes the folder. */
  stop(): Promise<void>;
}

/** Starts what a file of daemon cluster tests runs on: the model answers every call with `steps`, in a loop. */
export async function startDaemonCluster(prefix: string, steps: ScriptStep[]): Promise<DaemonCluster> {
  const dir = await makeTempDir(prefix);
  const model = await startScriptedModelServer({ steps, loop: true, recordRequests: false });
  const postgres = await startTestPostgres();
  const nodes = new DaemonNodes(dir.path, model.url);
  return {
    dir,
    model,
    postgres,
    nodes,
    stop: async () => {
      await nodes.stopAll();
      await postgres.stop();
      await model.close();
      await dir.remove();
    },
  };
}
