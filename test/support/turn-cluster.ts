import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { type DaemonNode, DaemonNodes } from '../cluster/daemons.ts';
import { startTestPostgres, type TestPostgres } from './postgres-server.ts';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model-server.ts';
import { makeTempDir } from './test-kernel.ts';
import { waitFor } from './wait-for.ts';

/** An HTTP server of the test's that an agent's tool acts on: it counts the requests, and holds those to `/hold` unanswered. */
export interface World {
  url: string;
  /** Each request it got, as `METHOD /path`. */
  hits: string[];
}

/** What a file of turn tests on daemons sharing one PostgreSQL database runs on (see {@link useTurnCluster}). */
export interface TurnCluster {
  /** The file's PostgreSQL server. */
  readonly postgres: TestPostgres;
  /** The test's scripted model server. */
  readonly model: ScriptedModelServer;
  /** The test's daemons (their homes in the file's folder). */
  readonly nodes: DaemonNodes;
  /** The test's world, which the clerk's `http_request` reaches. */
  readonly world: World;
  /** The manifest of `clerk`, an agent on the scripted model that may call `http_request` on the world. */
  manifest(): string;
  /** Two nodes named `names` on a fresh database, holding their turns for the file's lease; the clerk spawned on the first and held by the second. */
  twoNodes(names: readonly [string, string]): Promise<{ a: DaemonNode; b: DaemonNode }>;
}

/**
 * Gives a test file a folder and a PostgreSQL server, and each of its tests a scripted model server,
 * daemons in separate processes ({@link DaemonNodes}) and a world, stopped after the test (the last
 * log lines of its nodes printed when it failed). The nodes hold their turns for `leaseSeconds`
 * (`[cluster] turn_lease_seconds`): short, so that a takeover comes soon.
 */
export function useTurnCluster(prefix: string, leaseSeconds: number): TurnCluster {
  let dir: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let postgres: TestPostgres | undefined;
  let test: { model: ScriptedModelServer; nodes: DaemonNodes; world: World; server: Server; held: ServerResponse[] } | undefined;
  const current = (): NonNullable<typeof test> => {
    if (test === undefined) throw new Error('useTurnCluster: used outside a test');
    return test;
  };
  const database = (): TestPostgres => {
    if (postgres === undefined) throw new Error('useTurnCluster: the PostgreSQL server is not running');
    return postgres;
  };

  beforeAll(async () => {
    dir = await makeTempDir(prefix);
    postgres = await startTestPostgres();
  }, 120_000);

  afterAll(async () => {
    await postgres?.stop();
    await dir?.remove();
  }, 60_000);

  beforeEach(async () => {
    if (dir === undefined) throw new Error('useTurnCluster: the folder is not made');
    const model = await startScriptedModelServer({ steps: [] });
    const hits: string[] = [];
    const held: ServerResponse[] = [];
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      hits.push(`${request.method ?? ''} ${request.url ?? ''}`);
      request.resume();
      if (request.url === '/hold') held.push(response);
      else response.end('the order is placed');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const world = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
    test = { model, nodes: new DaemonNodes(dir.path, model.url), world, server, held };
  });

  afterEach(async (context) => {
    const { model, nodes, server, held } = current();
    if (context.task.result?.state === 'fail')
      for (const node of nodes.started)
        process.stderr.write(`--- the last log lines of node "${node.name}":\n${node.output().split('\n').slice(-40).join('\n')}\n`);
    await nodes.stopAll();
    for (const response of held) response.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await model.close();
    test = undefined;
  }, 30_000);

  const manifest = (): string =>
    `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${current().model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${current().world.url.slice('http://'.length)}"]\n`;

  return {
    get postgres() {
      return database();
    },
    get model() {
      return current().model;
    },
    get nodes() {
      return current().nodes;
    },
    get world() {
      return current().world;
    },
    manifest,
    async twoNodes([first, second]) {
      const { nodes } = current();
      const { url } = await database().createDatabase();
      const cluster = { turn_lease_seconds: leaseSeconds };
      const a = await nodes.start(first, url, { cluster });
      const b = await nodes.start(second, url, { cluster });
      const spawned = await fetch(`${a.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest() });
      expect(spawned.status).toBe(201);
      await waitFor('the second node to hold the clerk', async () => (await fetch(`${b.url}/api/agents/clerk`)).ok);
      return { a, b };
    },
  };
}
