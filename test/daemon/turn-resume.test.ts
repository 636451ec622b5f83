import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNKNOWN_OUTCOME_TEXT } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type DaemonProcess, useDaemonHome } from '../support/daemon-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { copies, type Session } from '../support/session-copies.ts';

const model = useScriptedModelServer();
const daemons = useDaemonHome('loom-resume-');

/**
 * The world a tool acts on: an HTTP server on 127.0.0.1 that counts the requests it gets, and
 * holds those to `/hold` unanswered (a tool call under way when the daemon is killed).
 */
let world: { server: Server; url: string; hits: { method: string; path: string }[]; held: ServerResponse[] };

beforeEach(async () => {
  const hits: { method: string; path: string }[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    hits.push({ method: request.method ?? '', path: request.url ?? '' });
    request.resume();
    // `/hold-once` holds only its first request: a call run again gets an answer.
    if (request.url === '/hold' || (request.url === '/hold-once' && hits.filter((hit) => hit.path === '/hold-once').length === 1)) held.push(response);
    else response.end('the order is placed');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  world = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, held };
});

afterEach(async () => {
  for (const response of world.held) response.destroy();
  await new Promise<void>((resolve) => world.server.close(() => resolve()));
});

const post = (url: string, path: string, body: string, type = 'application/json'): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

/** An agent that may call `http_request` on the world's server, its calls approved by a person when `approval` is set. */
function manifest(approval = false): string {
  return `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${world.url.slice('http://'.length)}"]\n${approval ? '[autonomous]\napproval_required_for = ["http_request"]\n' : ''}`;
}

/** Starts a daemon with the clerk and sends it "place the order" without waiting for the reply. */
async function startTurn(approval = false): Promise<DaemonProcess> {
  const daemon = await daemons.start();
  expect((await post(daemon.url, '/api/agents', manifest(approval), 'application/toml')).status).toBe(201);
  void post(daemon.url, '/api/agents/clerk/messages', JSON.stringify({ message: 'place the order' })).catch(() => undefined);
  return daemon;
}

async function kill(daemon: DaemonProcess): Promise<void> {
  daemon.child.kill('SIGKILL');
  await daemon.exited;
}

/**
 * Starts the clerk with its calls approved by a person, kills its daemon while the call waits for
 * approval (the model then says `reply`), and starts the daemon again: the request and the new daemon.
 */
async function killWhileAsked(reply: string): Promise<{ asked: { id: string }; second: DaemonProcess }> {
  model.script([{ toolCalls: [order('/place')] }, { text: reply }]);
  const first = await startTurn(true);
  const asked = await waitFor('the approval request', async () => pendingApprovals(first).then((listed) => listed[0]));
  await kill(first);
  return { asked, second: await daemons.start() };
}

/** The clerk's session once no turn runs on it and it ends with an answer. */
async function finishedSession(daemon: DaemonProcess): Promise<Session> {
  return waitFor('the resumed turn to be committed', async () => {
    const session = (await (await fetch(`${daemon.url}/api/agents/clerk/session`)).json()) as Session;
    return session.running === null && session.messages.length > 0 ? session : undefined;
  });
}

/** The approval requests pending on a daemon. */
const pendingApprovals = async (daemon: DaemonProcess): Promise<{ id: string }[]> =>
  (await (await fetch(`${daemon.url}/api/approvals?status=pending`)).json()) as { id: string }[];

/** The trace of the session's turn (`providerOptions.loom.turn` on its user message): each step's kind, tool and approval. */
function traceOf(session: Session): { kind: string; toolName: string | undefined; approval: string | undefined }[] {
  const user = session.messages.find((message) => message.role === 'user') as
    { providerOptions?: { loom?: { turn?: { steps: { kind: string; toolName?: string; approval?: string }[] } } } } | undefined;
  return (user?.providerOptions?.loom?.turn?.steps ?? []).map((step) => ({ kind: step.kind, toolName: step.toolName, approval: step.approval }));
}

/** Every approval request of a daemon, by id and status. */
const everyApproval = async (daemon: DaemonProcess): Promise<{ id: string; status: string }[]> =>
  ((await (await fetch(`${daemon.url}/api/approvals?status=all`)).json()) as { id: string; status: string }[]).map(({ id, status }) => ({ id, status }));

/** A trace of one `http_request` call (decided by a person as `approval`) between two model calls, as {@link traceOf} gives it. */
const oneCallBetweenModelCalls = (approval: string | undefined): ReturnType<typeof traceOf> => [
  { kind: 'model', toolName: undefined, approval: undefined },
  { kind: 'tool', toolName: 'http_request', approval },
  { kind: 'model', toolName: undefined, approval: undefined },
];

const order = (path: string, method = 'POST'): { name: string; input: Record<string, unknown> } => ({
  name: 'http_request',
  input: { url: `${world.url}${path}`, method, body: 'one order' },
});

describe('a turn the daemon is killed (SIGKILL) in resumes at the next start', () => {
  it('during a call that is not idempotent: the call is not run again, and the model is told its outcome is unknown', async () => {
    model.script([{ toolCalls: [order('/hold')] }, { text: 'I will check whether the order went through.' }]);
    const first = await startTurn();
    await waitFor('the tool call to reach the world', () => world.hits.length >= 1);
    await kill(first);

    const second = await daemons.start();
    const session = await finishedSession(second);
    expect(world.hits).toEqual([{ method: 'POST', path: '/hold' }]);
    // The model's reply with the call was taken from the journal: only the next step was asked.
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests[1]?.body)).toContain('it may or may not have run');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'http_request')).toBe(1);
    expect(copies(session, 'tool', UNKNOWN_OUTCOME_TEXT.slice(0, 40))).toBe(1);
    expect(copies(session, 'assistant', 'I will check whether the order went through.')).toBe(1);
    await kill(second);
  });

  it('during a call that is idempotent (a GET): nothing it did needed keeping, so its step is asked again and the call runs again', async () => {
    model.script([{ toolCalls: [order('/place')] }, { toolCalls: [order('/hold-once', 'GET')] }]);
    const first = await startTurn();
    await waitFor('the second tool call to reach the world', () => world.hits.length >= 2);
    await kill(first);

    // The reply asking for the GET was held back (the call could run again): the model is asked for that step again.
    model.script([{ toolCalls: [order('/hold-once', 'GET')] }, { text: 'Here is the page.' }]);
    const second = await daemons.start();
    const session = await finishedSession(second);
    expect(world.hits).toEqual([
      { method: 'POST', path: '/place' },
      { method: 'GET', path: '/hold-once' },
      { method: 'GET', path: '/hold-once' },
    ]);
    expect(model.requests).toHaveLength(4);
    // The POST is not run again: its result came from the journal.
    expect(JSON.stringify(model.requests[2]?.body)).toContain('the order is placed');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'http_request')).toBe(2);
    expect(copies(session, 'tool', 'the order is placed')).toBe(2);
    expect(copies(session, 'assistant', 'Here is the page.')).toBe(1);
    await kill(second);
  });

  it('after a tool result, during the last model call: the call is not run again and the model gets its result', async () => {
    model.script([{ toolCalls: [order('/place')] }, { text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const first = await startTurn();
    await waitFor('the model call after the tool result', () => model.requests.length >= 2);
    await kill(first);

    model.script([{ text: 'The order is placed.' }]);
    const second = await daemons.start();
    const session = await finishedSession(second);
    expect(world.hits).toEqual([{ method: 'POST', path: '/place' }]);
    expect(model.requests).toHaveLength(3);
    expect(JSON.stringify(model.requests[2]?.body)).toContain('the order is placed');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'http_request')).toBe(1);
    expect(copies(session, 'tool', 'the order is placed')).toBe(1);
    expect(copies(session, 'assistant', 'The order is placed.')).toBe(1);
    // The turn's trace holds the call made before the restart, between the model calls.
    expect(traceOf(session)).toEqual(oneCallBetweenModelCalls(undefined));
    await kill(second);
  });

  it('while a call waits for a person: the request survives the restart, and approving it runs the call once and finishes the turn', async () => {
    const { asked, second } = await killWhileAsked('Done.');
    // The same request, still pending: the resumed turn waits on it rather than asking again.
    expect((await pendingApprovals(second)).map((request) => request.id)).toEqual([asked.id]);
    expect((await post(second.url, `/api/approvals/${asked.id}/approve`, '{}')).status).toBe(200);
    const session = await finishedSession(second);
    expect(world.hits).toEqual([{ method: 'POST', path: '/place' }]);
    expect(model.requests).toHaveLength(2);
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'tool', 'the order is placed')).toBe(1);
    expect(copies(session, 'assistant', 'Done.')).toBe(1);
    expect(await everyApproval(second)).toEqual([{ id: asked.id, status: 'approved' }]);
    expect(traceOf(session)).toEqual(oneCallBetweenModelCalls('approved'));
    await kill(second);
  });

  it('while a call waits for a person: denying the request after the restart gives the model the refusal, and nothing runs', async () => {
    const { asked, second } = await killWhileAsked('I did not place it.');
    expect((await post(second.url, `/api/approvals/${asked.id}/deny`, JSON.stringify({ reason: 'not today' }))).status).toBe(200);
    const session = await finishedSession(second);
    expect(world.hits).toEqual([]);
    expect(JSON.stringify(model.requests[1]?.body)).toContain('was not approved');
    expect(JSON.stringify(model.requests[1]?.body)).toContain('not today');
    expect(copies(session, 'tool', 'was not approved')).toBe(1);
    expect(copies(session, 'assistant', 'I did not place it.')).toBe(1);
    expect(await everyApproval(second)).toEqual([{ id: asked.id, status: 'denied' }]);
    await kill(second);
  });
});

describe('a turn whose caller was told it is taken, killed (SIGKILL) before its first step', () => {
  /** Sends "place the order" as a streamed reply and resolves once its response (the acknowledgment) has begun. */
  async function streamTurn(daemon: DaemonProcess, agent: string): Promise<void> {
    const response = await fetch(`${daemon.url}/api/agents/${agent}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ message: 'place the order' }),
    });
    expect(response.status).toBe(200);
    void response.body?.cancel().catch(() => undefined);
  }

  it('an assistant turn streamed to its caller resumes at the next start: its message is not lost', async () => {
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const first = await daemons.start();
    expect((await post(first.url, '/api/agents', manifest(), 'application/toml')).status).toBe(201);
    await streamTurn(first, 'clerk');
    await waitFor('the first model call', () => model.requests.length >= 1);
    await kill(first);

    model.script([{ text: 'Your order is noted.' }]);
    const second = await daemons.start();
    const session = await finishedSession(second);
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'Your order is noted.')).toBe(1);
    expect(model.requests).toHaveLength(2);
    await kill(second);
  });

  it('a scheduled run forced now resumes its turn at the next start, and the run is recorded as interrupted', async () => {
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const first = await daemons.start();
    // Due once a year: nothing but the forced run wakes it.
    const reporter = `name = "reporter"\n[schedule]\nmode = "periodic"\ncron = "0 0 1 1 *"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    expect((await post(first.url, '/api/agents', reporter, 'application/toml')).status).toBe(201);
    void post(first.url, '/api/agents/reporter/runs', '{}').catch(() => undefined);
    await waitFor('the wake-up to reach the model', () => model.requests.length >= 1);
    await kill(first);

    model.script([{ text: 'The report is written.' }]);
    const second = await daemons.start();
    const session = await waitFor('the resumed wake-up to be committed', async () => {
      const current = (await (await fetch(`${second.url}/api/agents/reporter/session`)).json()) as Session;
      return current.running === null && current.messages.length > 1 ? current : undefined;
    });
    expect(copies(session, 'assistant', 'The report is written.')).toBe(1);
    expect(session.messages.filter((message) => message.role === 'user')).toHaveLength(1);
    const runs = (await (await fetch(`${second.url}/api/agents/reporter/runs`)).json()) as { outcome: string; reason: string }[];
    expect(runs.map((run) => [run.outcome, run.reason])).toEqual([
      ['interrupted', "interrupted: the daemon stopped while the run was going; a turn it had begun resumes at this start, in the agent's session"],
    ]);
    await kill(second);
  });

  it('a chain-of-thought turn is not resumed: its message is kept with a record saying it was interrupted, in the session and the log', async () => {
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const first = await daemons.start();
    const thinker = `name = "thinker"\nmodule = "builtin:chain-of-thought"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    expect((await post(first.url, '/api/agents', thinker, 'application/toml')).status).toBe(201);
    await streamTurn(first, 'thinker');
    await waitFor('the first model call', () => model.requests.length >= 1);
    await kill(first);

    const second = await daemons.start();
    const session = await waitFor('the interrupted turn to be recorded', async () => {
      const current = (await (await fetch(`${second.url}/api/agents/thinker/session`)).json()) as Session;
      return current.running === null && current.messages.length > 0 ? current : undefined;
    });
    expect(copies(session, 'user', 'place the order')).toBe(1);
    const user = session.messages[0] as { providerOptions?: { loom?: { turn?: { status: string; reason: string } } } };
    expect(user.providerOptions?.loom?.turn?.status).toBe('failed');
    expect(user.providerOptions?.loom?.turn?.reason).toContain('a turn of a builtin:chain-of-thought agent is not resumed');
    expect(second.output()).toContain('was interrupted and is not resumed');
    // Nothing was asked of the model again.
    expect(model.requests).toHaveLength(1);
    await kill(second);
  });
});
