import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJobQueue } from '../../src/cluster/index.ts';
import { startScriptedModelServer, type ScriptedModelServer, type ScriptStep } from '../support/scripted-model-server.ts';
import { TEST_POSTGRES_PASSWORD } from '../support/postgres-server.ts';
import { type RestartablePostgres, startRestartablePostgres } from '../support/restartable-postgres.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml } from '../http/api-harness.ts';
import { activityJson, bindingJson, writePackage } from '../packages/support.ts';
import { clusterOf, type DaemonNode, DaemonNodes, waitFor } from './daemons.ts';

// Faults under a cluster on PostgreSQL, with daemons in separate processes (each its own
// LOOM_HOME): the database restarting while turns run, the network to a node pausing for longer
// than its job lease, a node SIGKILLed in the middle of a turn. Each test asserts what a user
// sees: HTTP answers, sessions, what the nodes show and log, and the queue's records.

const HEARTBEAT_TIMER = 'package beat/check';

let postgres: RestartablePostgres;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let nodes: DaemonNodes;
/** Run after each test, last first, whether it passed or not. */
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  dir = await makeTempDir('loom-faults-');
  postgres = await startRestartablePostgres();
  // Each test gives its nodes its own model server.
  nodes = new DaemonNodes(dir.path, 'http://127.0.0.1:9/v1');
}, 120_000);

afterEach(async (context) => {
  if (context.task.result?.state === 'fail')
    for (const node of nodes.started)
      process.stderr.write(`--- the last log lines of node "${node.name}":\n${node.output().split('\n').slice(-40).join('\n')}\n`);
  nodes.started.splice(0);
  await nodes.stopAll();
  for (const cleanup of cleanups.splice(0).reverse()) {
    await Promise.resolve()
      .then(cleanup)
      .catch(() => undefined);
  }
  // A test that failed while the server was down leaves it up for the next.
  await postgres?.start();
}, 30_000);

afterAll(async () => {
  await postgres?.close();
  await dir?.remove();
}, 60_000);

/** The messages of a node's JSON log lines so far. */
function logOf(node: DaemonNode): string[] {
  const messages: string[] = [];
  for (const line of node.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const record = JSON.parse(line) as { msg?: unknown };
      if (typeof record.msg === 'string') messages.push(record.msg);
    } catch {
      // A line cut off by the end of the output so far.
    }
  }
  return messages;
}

const post = (url: string, path: string, body: unknown, type = 'application/json'): Promise<Response> =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': type },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });

const getJson = async <T>(url: string, path: string, ms = 10_000): Promise<T> => {
  const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(ms) });
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
};

/** Spawns an agent on `node` whose model is the scripted server. */
async function spawnAgent(node: DaemonNode, name: string, modelUrl: string): Promise<void> {
  const response = await post(node.url, '/api/agents', agentToml(name, modelUrl), 'application/toml');
  expect(response.status, await response.clone().text()).toBe(201);
}

/** Sends a message to an agent; the answer's promise may be awaited later (a failure meanwhile is not an unhandled rejection). */
function send(node: DaemonNode, agent: string, message: string): Promise<Response> {
  const answer = post(node.url, `/api/agents/${agent}/messages`, { message });
  answer.catch(() => undefined);
  return answer;
}

/** The reply of a turn that was acknowledged (200), or a failure saying what came instead. */
async function replyOf(response: Response): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return (JSON.parse(text) as { text: string }).text;
}

interface ErrorBody {
  error: { code: string; message: string };
}

/** `role: text` for each message of a session or a model request (the system prompt left out). */
function transcript(messages: readonly unknown[]): string[] {
  return messages.flatMap((message) => {
    const { role, content } = message as { role: string; content: unknown };
    if (role === 'system') return [];
    const text =
      typeof content === 'string'
        ? content
        : Array.isArray(content)
          ? content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('')
          : '';
    return [`${role}: ${text}`];
  });
}

const sessionOf = (node: DaemonNode, agent: string): Promise<{ messages: unknown[]; running: unknown }> => getJson(node.url, `/api/agents/${agent}/session`);

async function startModel(steps: ScriptStep[], options: { loop?: boolean } = {}): Promise<ScriptedModelServer> {
  const model = await startScriptedModelServer({ steps, ...options });
  cleanups.push(() => model.close());
  return model;
}

describe('faults of daemons on PostgreSQL', () => {
  it('a database restart while turns run: the turn committing as it goes down fails naming the database, the daemon stays up, the pool reconnects, and every acknowledged turn is kept', async () => {
    const database = await postgres.createDatabase();
    const betaAnswer = Promise.withResolvers<void>();
    cleanups.push(() => betaAnswer.resolve());
    const model = await startModel([
      { text: 'alpha answer 1' },
      { text: 'beta answer 1' },
      { text: 'alpha answer 2' },
      { text: 'beta answer 2', gate: betaAnswer.promise },
      { text: 'alpha answer 3' },
    ]);
    const node = await nodes.start('steady', database.url, { modelUrl: model.url });
    await spawnAgent(node, 'alpha', model.url);
    await spawnAgent(node, 'beta', model.url);
    expect(await replyOf(await send(node, 'alpha', 'alpha question 1'))).toBe('alpha answer 1');
    expect(await replyOf(await send(node, 'beta', 'beta question 1'))).toBe('beta answer 1');

    // Alpha's second turn is committing when the server goes down: its transaction waits for the
    // session's row, which the test holds locked.
    const locker = new pg.Client({ connectionString: database.url });
    locker.on('error', () => undefined);
    cleanups.push(() => locker.end());
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query("SELECT 1 FROM sessions WHERE id = (SELECT session_id FROM agents WHERE name = 'alpha') FOR UPDATE");
    const alphaTwo = send(node, 'alpha', 'alpha question 2');
    await waitFor("alpha's second turn to wait for its session's row", async () => {
      const waiting = await postgres.query(
        "SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = $1 AND application_name = 'loom' AND wait_event_type = 'Lock'",
        [database.name],
      );
      return (waiting.rows[0] as { count: number }).count > 0 ? true : undefined;
    });
    expect(model.requests).toHaveLength(3);
    // Beta's second turn is waiting for its model's answer, which comes after the restart.
    const betaTwo = send(node, 'beta', 'beta question 2');
    await waitFor("beta's second model call", () => (model.requests.length === 4 ? true : undefined));

    // The server ends its connections as it goes down in an order of its own: had it ended the
    // test's (the row's holder) first, alpha's commit could go through before its own connection
    // ended. Alpha's is ended first, with the error a restart gives it (57P01, as an administrator's).
    await postgres.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'loom' AND wait_event_type = 'Lock'",
      [database.name],
    );
    await postgres.stop();
    const failed = await alphaTwo;
    const failure = (await failed.json()) as ErrorBody;
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('1');
    expect(failure.error.code).toBe('STORE_FAILURE');
    expect(failure.error.message).toContain(`(database postgres://postgres@127.0.0.1:${postgres.port}/${database.name}); try again`);
    expect(failure.error.message).toMatch(
      /^cannot append to session "[^"]+": the server is shutting down or starting \(terminating connection due to administrator command\)/,
    );
    expect(failure.error.message).not.toContain(TEST_POSTGRES_PASSWORD);

    // While it is down, a turn is refused at once, before the model is called.
    const refused = await send(node, 'alpha', 'alpha question while down');
    const refusal = (await refused.json()) as ErrorBody;
    expect(refused.status).toBe(503);
    expect(refusal.error.code).toBe('STORE_FAILURE');
    expect(refusal.error.message).toContain(
      `nothing answers at 127.0.0.1:${postgres.port} (connection refused) (database postgres://postgres@127.0.0.1:${postgres.port}/${database.name}); try again`,
    );
    expect(model.requests).toHaveLength(4);
    // The daemon keeps running.
    expect((await fetch(`${node.url}/api/health`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
    expect(node.child.exitCode).toBeNull();

    await postgres.start();
    // The turn in flight across the restart is acknowledged, and the next one runs: the pool reconnected.
    betaAnswer.resolve();
    expect(await replyOf(await betaTwo)).toBe('beta answer 2');
    expect(await replyOf(await send(node, 'alpha', 'alpha question 3'))).toBe('alpha answer 3');
    // The model saw alpha's history without the turn that failed.
    expect(transcript(model.requests[4]?.body['messages'] as unknown[])).toEqual([
      'user: alpha question 1',
      'assistant: alpha answer 1',
      'user: alpha question 3',
    ]);
    expect(model.requests).toHaveLength(5);

    // Every acknowledged turn is in its session, nothing of the failed ones.
    const alpha = await sessionOf(node, 'alpha');
    expect(transcript(alpha.messages)).toEqual(['user: alpha question 1', 'assistant: alpha answer 1', 'user: alpha question 3', 'assistant: alpha answer 3']);
    expect(alpha.running).toBeNull();
    expect(transcript((await sessionOf(node, 'beta')).messages)).toEqual([
      'user: beta question 1',
      'assistant: beta answer 1',
      'user: beta question 2',
      'assistant: beta answer 2',
    ]);
    // The node leads again (it lost its lock connection with the server), and stops cleanly.
    const view = await waitFor('the node to lead again', async () => {
      const current = await clusterOf(node);
      return current.leader === current.self ? current : undefined;
    });
    expect(view.nodes.map((entry) => [entry.name, entry.alive])).toEqual([['steady', true]]);
    expect(node.child.exitCode).toBeNull();
    expect(await nodes.stop(node)).toBe(0);
  }, 60_000);

  it('a network pause longer than the job lease: the other node takes the job again and completes it once, the paused node stops it; the paused leader steps down, the other leads, no instant fires twice', async () => {
    const database = await postgres.createDatabase();
    const model = await startModel([{ text: 'all quiet' }], { loop: true });
    const proxy = await startTcpProxy({ port: postgres.port });
    cleanups.push(() => proxy.close());
    const cluster = { job_lease_seconds: 2 };
    const a = await nodes.start('pause-a', proxy.urlFor(database.url), { modelUrl: model.url, cluster });
    const aId = (await clusterOf(a)).self;
    // A heartbeat every second; the leader (A, alone so far) fires it.
    const folder = await writePackage(dir.path, 'beat', {
      workflows: { check: bindingJson({ type: 'heartbeat', interval: '1s' }, [activityJson('look', { on_error: { retry: 0, fallback: 'Skip' } })]) },
    });
    expect((await post(a.url, '/api/packages', { source: folder })).status).toBe(201);

    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined);
    cleanups.push(() => pool.end());
    const rows = async <T>(text: string, values: unknown[] = []): Promise<T[]> => (await pool.query(text, values)).rows as T[];
    const claims = (): Promise<{ at: number; node_id: string }[]> =>
      rows('SELECT at::float8 AS at, node_id FROM loom_timer_fires WHERE timer = $1 ORDER BY at', [HEARTBEAT_TIMER]);
    const attempts = (id: string): Promise<{ attempt: number; node_id: string; outcome: string | null }[]> =>
      rows('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id]);
    // A job that takes 8 s, enqueued while A runs alone: A takes it.
    const { id: jobId } = await createJobQueue({ database: pool, nodeId: 'test' }).enqueue({
      kind: 'echo',
      payload: { sleep_ms: 8_000 },
      dedupeKey: 'slow echo',
    });
    await waitFor('node A to take the job', async () => ((await attempts(jobId))[0]?.node_id === aId ? true : undefined));
    const b = await nodes.start('pause-b', database.url, { modelUrl: model.url, cluster });
    const bId = (await clusterOf(b)).self;
    expect((await clusterOf(b)).leader).toBe(aId);
    await waitFor('A to fire the heartbeat twice', async () => ((await claims()).length >= 2 ? true : undefined));

    proxy.pause();
    const pausedAt = Date.now();
    // A's lease lapses unrenewed: B takes the job again.
    await waitFor('node B to take the job again', async () => ((await attempts(jobId))[1]?.node_id === bId ? true : undefined));
    // A stopped the job itself once its lease lapsed, without waiting for the database to answer.
    await waitFor('node A to stop the job', () =>
      logOf(a).includes(`stopped job "${jobId}" (echo): its lease lapsed without being renewed`) ? true : undefined,
    );
    expect(Date.now() - pausedAt).toBeLessThan(7_000);
    // A's lock connection does not answer for 5 s: A stops leading on its own.
    await waitFor('node A to stop leading', () =>
      logOf(a).some((message) => message.startsWith('node "pause-a" stopped leading: its lock connection does not answer')) ? true : undefined,
    );
    expect((await clusterOf(b)).leader).not.toBe(bId);
    // The server frees a lock only once it ends the session holding it, which across a partition it
    // notices by TCP keep-alive (two hours by default): the test plays that part.
    const ended = await rows<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND pid = (SELECT lock_pid FROM loom_nodes WHERE id = $1)",
      [aId],
    );
    expect(ended).toEqual([{ ended: true }]);
    await waitFor('node B to lead', async () => ((await clusterOf(b)).leader === bId ? true : undefined));
    await waitFor('B to fire the heartbeat twice', async () => ((await claims()).filter((claim) => claim.node_id === bId).length >= 2 ? true : undefined));

    proxy.resume();
    // A answers again, records its heartbeat again, and sees B lead.
    const view = await waitFor('node A to answer again, B leading', async () => {
      const current = await clusterOf(a, 2_000);
      return current.leader === bId && current.nodes.every((node) => node.alive) ? current : undefined;
    });
    expect(view.nodes.map((node) => [node.name, node.alive, node.leader]).sort()).toEqual([
      ['pause-a', true, false],
      ['pause-b', true, true],
    ]);
    // The job ends done once, by B; A's attempt is recorded lost, and A never tried to complete it.
    await waitFor('the job to be done', async () =>
      (await rows<{ state: string }>('SELECT state FROM loom_jobs WHERE id = $1', [jobId]))[0]?.state === 'done' ? true : undefined,
    );
    expect(await attempts(jobId)).toEqual([
      { attempt: 1, node_id: aId, outcome: 'lost' },
      { attempt: 2, node_id: bId, outcome: 'done' },
    ]);
    expect(logOf(a).filter((message) => message.includes(`job "${jobId}"`))).toEqual([
      `stopped job "${jobId}" (echo): its lease lapsed without being renewed`,
      `job "${jobId}" (echo) ended here after its lease was lost: another node may have run it; nothing recorded`,
    ]);

    // No instant fired twice: each claimed once, in order, a second apart, A's all before B's.
    await waitFor('one more fire after the pause', async () => {
      const all = await claims();
      return all.at(-1)?.node_id === bId && all.filter((claim) => claim.node_id === bId).length >= 3 ? true : undefined;
    });
    const fired = await claims();
    const instants = fired.map((claim) => claim.at);
    expect(new Set(instants).size).toBe(instants.length);
    for (let index = 1; index < instants.length; index += 1) expect(instants[index]! - instants[index - 1]!).toBeGreaterThanOrEqual(1000);
    expect(fired.map((claim) => (claim.node_id === aId ? 'a' : claim.node_id === bId ? 'b' : claim.node_id)).join('')).toMatch(/^a+b+$/);
    // Each fire is the job of an instant claimed, and each heartbeat run a job's (a job run again keeps its run).
    const jobs = await rows<{ id: string; dedupe_key: string }>("SELECT id, dedupe_key FROM loom_jobs WHERE kind = 'package-run'");
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.filter((job) => !instants.some((at) => job.dedupe_key === `${HEARTBEAT_TIMER}@${at}`))).toEqual([]);
    const runs = await getJson<{ id: string; trigger: string; status: string }[]>(b.url, '/api/packages/runs?package=beat');
    const heartbeatRuns = runs.filter((run) => run.trigger === 'heartbeat' && run.status !== 'missed');
    expect(heartbeatRuns.length).toBeGreaterThan(0);
    expect(heartbeatRuns.length).toBeLessThanOrEqual(instants.length);
    const jobIds = new Set(jobs.map((job) => job.id));
    expect(heartbeatRuns.filter((run) => !jobIds.has(run.id))).toEqual([]);

    expect(await nodes.stop(a)).toBe(0);
    expect(await nodes.stop(b)).toBe(0);
  }, 90_000);

  it('a claim answered only after a whole job lease (the network paused while it waited) hands its jobs back at once, and the node runs them then', async () => {
    const database = await postgres.createDatabase();
    const model = await startModel([]);
    const proxy = await startTcpProxy({ port: postgres.port });
    cleanups.push(() => proxy.close());
    const a = await nodes.start('late-a', proxy.urlFor(database.url), { modelUrl: model.url, cluster: { job_lease_seconds: 2 } });
    const aId = (await clusterOf(a)).self;
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined);
    cleanups.push(() => pool.end());

    // The link drops A's connections and then carries nothing: A's next look for jobs (it looks
    // every second) waits for a connection, and is answered once the pause ends, more than a
    // lease (2 s) after it asked. (Cut first, so that no look under way when the pause began has
    // already run on the server.)
    proxy.cut();
    proxy.pause();
    const { id } = await createJobQueue({ database: pool, nodeId: 'test' }).enqueue({ kind: 'echo', payload: {} });
    await delay(3_500);
    proxy.resume();
    await waitFor('the job to be done', async () =>
      (await pool.query<{ state: string }>('SELECT state FROM loom_jobs WHERE id = $1', [id])).rows[0]?.state === 'done' ? true : undefined,
    );
    // Not run on a lease it could not be sure of: handed back (not counted), then run at once.
    expect((await pool.query('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id])).rows).toEqual([
      { attempt: 1, node_id: aId, outcome: 'released' },
      { attempt: 2, node_id: aId, outcome: 'done' },
    ]);
    expect(logOf(a)).toContain('took 1 job(s) in an answer that came after their lease of 2000 ms; handed them back');
    expect(await nodes.stop(a)).toBe(0);
  }, 60_000);

  it('a node SIGKILLed mid-turn: its caller gets a broken connection, the session read on the other node holds only committed turns, and the other node runs the next turn', async () => {
    const database = await postgres.createDatabase();
    const never = Promise.withResolvers<void>();
    cleanups.push(() => never.resolve());
    const model = await startModel([{ text: 'answer one' }, { text: 'answer never sent', gate: never.promise }, { text: 'answer three' }]);
    const a = await nodes.start('turn-a', database.url, { modelUrl: model.url });
    await spawnAgent(a, 'talker', model.url);
    expect(await replyOf(await send(a, 'talker', 'question one'))).toBe('answer one');
    // The node that takes over is up before the turn it takes over from.
    const b = await nodes.start('turn-b', database.url, { modelUrl: model.url });

    const cut = send(a, 'talker', 'question two').then(
      (response) => ({ status: response.status }),
      (error: unknown) => error,
    );
    await waitFor('the second model call', () => (model.requests.length === 2 ? true : undefined));
    a.child.kill('SIGKILL');
    await a.exited;
    const outcome = await cut;
    expect(outcome).toBeInstanceOf(TypeError);
    expect((outcome as TypeError).message).toBe('fetch failed');
    expect(String((outcome as TypeError).cause)).toMatch(/other side closed|ECONNRESET|socket hang up/);

    // Only the committed turn, read on the other node: no half of the second.
    const kept = await sessionOf(b, 'talker');
    expect(transcript(kept.messages)).toEqual(['user: question one', 'assistant: answer one']);
    expect(kept.running).toBeNull();
    // The other node runs the agent's next turn, on that history.
    expect(await replyOf(await send(b, 'talker', 'question three'))).toBe('answer three');
    expect(transcript(model.requests[2]?.body['messages'] as unknown[])).toEqual(['user: question one', 'assistant: answer one', 'user: question three']);
    expect(transcript((await sessionOf(b, 'talker')).messages)).toEqual([
      'user: question one',
      'assistant: answer one',
      'user: question three',
      'assistant: answer three',
    ]);
    expect(await nodes.stop(b)).toBe(0);
  }, 60_000);
});
