/**
 * What answers under [a2a].listen_path, beside a built dashboard: A2A's routes, and for a path no
 * A2A route takes, A2A's JSON 404, never the dashboard's page (at the default path, a custom one,
 * one written with a trailing slash, and `/`, where the dashboard still serves its own files).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentToml, type Api, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

const PAGE = '<!doctype html><title>Loom</title><script type="module" src="/assets/index-abc123.js"></script><div id="app"></div>';

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-listen-path-');
  await mkdir(join(dir.path, 'dist', 'assets'), { recursive: true });
  await writeFile(join(dir.path, 'dist', 'index.html'), PAGE);
  await writeFile(join(dir.path, 'dist', 'assets', 'index-abc123.js'), 'document.title = "Loom";');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

/** The daemon with A2A under `listenPath` (the default when undefined), the dashboard built, and the agent `helper`. */
async function serve(listenPath: string | undefined): Promise<Api> {
  const a2a = listenPath === undefined ? { enabled: true } : { enabled: true, listen_path: listenPath };
  api = await startApi(join(dir.path, 'home'), { config: { a2a }, env: { LOOM_DASHBOARD_DIR: join(dir.path, 'dist') } });
  const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) });
  expect(spawned.status).toBe(201);
  return api;
}

/** What `path` answers: its status, and its body as JSON, or `page` when it is the dashboard's page. */
async function answerOf(served: Api, path: string, method = 'GET'): Promise<{ path: string; status: number; body: unknown }> {
  const response = await served.request(path, { method });
  const text = await response.text();
  if ((response.headers.get('content-type') ?? '').startsWith('text/html')) return { path, status: response.status, body: text === PAGE ? 'page' : text };
  return { path, status: response.status, body: text === '' ? '' : (JSON.parse(text) as unknown) };
}

describe.each([
  ['the default listen path', undefined, '/a2a'],
  ['a custom listen path', '/peers', '/peers'],
  ['a listen path written with a trailing slash', '/peers/', '/peers'],
  ['the listen path "/"', '/', ''],
])('with A2A at %s', (_what, listenPath, base) => {
  it('answers a GET under it that no A2A route takes with a JSON 404, not the dashboard', async () => {
    const served = await serve(listenPath);
    const unknown = [
      `${base}/helper/something-unknown`,
      `${base}/agents/helper/something-unknown`,
      // Routes that take only a POST.
      `${base}/helper`,
      `${base}/helper/rest/message:send`,
      `${base}/helper/v1/message:send`,
      `${base}/helper/v1/no-such-route`,
      ...(base === '' ? ['/approvals', '/no-such-page'] : [base, `${base}/`]),
    ];
    for (const path of unknown) {
      const answer = await answerOf(served, path);
      expect(answer).toMatchObject({ path, status: 404 });
      expect(answer.body).toEqual(expect.any(Object));
    }
    for (const path of [`${base}/helper/something-unknown`, `${base}/helper/v1/no-such-route`, `${base}/helper/v1/message:send`])
      expect(await answerOf(served, path, 'HEAD')).toEqual({ path, status: 404, body: '' });
  });

  it('serves its cards and tasks, and the dashboard its page and files', async () => {
    const served = await serve(listenPath);
    const card = await answerOf(served, `${base}/helper/.well-known/agent-card.json`);
    expect(card).toMatchObject({ status: 200, body: { name: 'helper', url: `${served.url}${base}/helper` } });
    expect(await answerOf(served, `${base}/agents`)).toMatchObject({ status: 200, body: { total: 1 } });
    expect(await answerOf(served, '/.well-known/agent-card.json')).toMatchObject({ status: 200, body: { name: 'helper' } });
    model.script([{ text: 'done' }]);
    const sent = await served.request(`${base}/tasks/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text: 'hi' }] } } }),
    });
    expect(sent.status).toBe(200);
    const task = (await sent.json()) as { id: string };
    expect(await answerOf(served, `${base}/tasks/${task.id}`)).toMatchObject({ status: 200, body: { id: task.id, status: 'completed' } });
    expect(await answerOf(served, `${base}/helper/rest/tasks/${task.id}`)).toMatchObject({ status: 200, body: { id: task.id } });
    for (const path of ['/', '/index.html']) expect(await answerOf(served, path)).toEqual({ path, status: 200, body: 'page' });
    expect((await served.request('/assets/index-abc123.js')).status).toBe(200);
  });
});

describe('a path that names the listen path only once decoded, or with a doubled slash', () => {
  it("is answered with A2A's JSON 404, not the dashboard", async () => {
    const served = await serve(undefined);
    // Worded as A2A words a path under it that no route takes, not as the API's 404 (which points at /api).
    expect(await answerOf(served, '/a2a/helper/something-unknown')).toMatchObject({
      status: 404,
      body: { error: { code: 'ROUTE_NOT_FOUND', message: 'no A2A route GET /a2a/helper/something-unknown' } },
    });
    // And told how the path is written.
    for (const [method, path, plain] of [
      ['GET', '/a2a%2Fhelper%2Fsomething-unknown', '/a2a/helper/something-unknown'],
      ['GET', '//a2a/helper/something-unknown', '/a2a/helper/something-unknown'],
      ['GET', '/a2a%2F', '/a2a/'],
      ['POST', '/a2a%2Fhelper', '/a2a/helper'],
      ['DELETE', '//a2a/helper/rest/tasks/x', '/a2a/helper/rest/tasks/x'],
      ['GET', '/a2a/helper%2Fv1%2Fcard', '/a2a/helper/v1/card'],
      ['GET', '/a2a%2fhelper%3Ano-route', '/a2a/helper:no-route'],
    ] as const) {
      expect(await answerOf(served, path, method)).toEqual({
        path,
        status: 404,
        body: {
          error: {
            code: 'ROUTE_NOT_FOUND',
            message: `no A2A route ${method} ${path}; write A2A's paths with single, unescaped slashes under /a2a: ${method} ${plain}`,
          },
        },
      });
    }
    // Another escape, with single slashes, is a path written as it should be: no advice.
    for (const path of ['/a2a/helper/no%3Aroute', '/a2a/helper/100%25-unknown']) {
      expect(await answerOf(served, path)).toEqual({ path, status: 404, body: { error: { code: 'ROUTE_NOT_FOUND', message: `no A2A route GET ${path}` } } });
    }
    expect(await answerOf(served, '/a2ax')).toEqual({ path: '/a2ax', status: 200, body: 'page' });
  });
});

describe('[a2a].listen_path', () => {
  it('refuses a path with an empty segment, saying what a path looks like', () => {
    for (const listenPath of ['//', '/a2a//x', '/a2a//', 'a2a']) {
      const parsed = ConfigSchema.safeParse({ a2a: { listen_path: listenPath } });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues).toEqual([
        expect.objectContaining({ path: ['a2a', 'listen_path'], message: expect.stringContaining('expected a path such as "/a2a"') as string }),
      ]);
    }
    expect(ConfigSchema.parse({ a2a: { listen_path: '/peers/' } }).a2a.listen_path).toBe('/peers');
  });
});

describe('with A2A at "/", a message to an agent and the request deadline', () => {
  it('waits for its turn past daemon.request_timeout_seconds, as under the default listen path', async () => {
    api = await startApi(join(dir.path, 'home'), { config: { a2a: { enabled: true, listen_path: '/' }, daemon: { request_timeout_seconds: 60 } } });
    expect(
      (await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) })).status,
    ).toBe(201);
    let answer = (): void => undefined;
    model.script([{ text: 'Late, but here.', gate: new Promise<void>((resolve) => (answer = resolve)) }]);
    const sent = api.request('/helper', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'Take your time.' }] } },
      }),
    });
    const served = api;
    await waitFor('the model to be asked', () => model.requests.length > 0);
    // A minute on the daemon's clock: a timed request would be answered 504 here.
    await served.host.clock.advance(60_000);
    answer();
    const response = await sent;
    expect(response.status).toBe(200);
    expect(JSON.stringify(await response.json())).toContain('Late, but here.');
  });
});
