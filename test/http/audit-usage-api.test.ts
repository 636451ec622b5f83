import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

interface Row {
  seq: number;
  type: string;
  agentId: string | null;
  data: Record<string, unknown>;
}

beforeEach(async () => {
  dir = await makeTempDir('loom-http-audit-');
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const toml = (text: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/toml' }, body: text });
const audit = async (query: string, init?: RequestInit): Promise<Row[]> => {
  const response = await api.request(`/api/audit${query}`, init);
  expect(response.status).toBe(200);
  return (await response.json()) as Row[];
};

async function spawn(name: string, extra = ''): Promise<void> {
  const response = await api.request('/api/agents', toml(agentToml(name, model.url, extra)));
  expect(response.status).toBe(201);
}

describe('GET /api/audit: turns, tool calls and model errors, newest first and paged', () => {
  beforeEach(async () => {
    api = await startApi(dir.path);
  });

  it('records a finished turn with its model, tokens and caller, and the tool calls it made, ran or refused', async () => {
    await spawn('worker', '[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n');
    model.script([
      {
        toolCalls: [
          { name: 'memory_store', input: { key: 'self.note', value: 'x' } },
          { name: 'file_write', input: { path: 'a', content: 'b' } },
        ],
      },
      { text: 'done', usage: { inputTokens: 12, outputTokens: 4 } },
    ]);
    expect((await api.request('/api/agents/worker/messages', json({ message: 'go' }))).status).toBe(200);

    const rows = await audit('?agent=worker&order=desc');
    expect(rows.map((row) => row.type)).toEqual(['turn-finish', 'tool-deny', 'tool-finish', 'agent-spawn']);
    expect(rows[0]?.data).toMatchObject({
      name: 'worker',
      kind: 'message',
      via: 'owner:local',
      model: 'openai/gpt-4o',
      iterations: 2,
      inputTokens: 22,
      outputTokens: 9,
    });
    expect(rows[1]?.data).toMatchObject({ tool: 'file_write', reason: expect.stringContaining('file_write') as string });
    expect(rows[2]?.data).toMatchObject({ name: 'worker', tool: 'memory_store', durationMs: expect.any(Number) as number });
  });

  it('records a turn whose every model failed as a model-fail, and one refused before it ran as a turn-refuse', async () => {
    await spawn('fragile');
    model.script([{ status: 400 }]);
    expect((await api.request('/api/agents/fragile/messages', json({ message: 'go' }))).status).toBe(502);
    await api.host.kernel.suspend('fragile');
    expect((await api.request('/api/agents/fragile/messages', json({ message: 'again' }))).status).toBe(409);

    expect((await audit('?kind=model-error')).map((row) => row.data)).toMatchObject([{ name: 'fragile', code: 'MODEL_CALL_FAILED' }]);
    expect((await audit('?outcome=refused')).map((row) => [row.type, row.data['code']])).toEqual([['turn-refuse', 'AGENT_STATE']]);
    expect((await audit('?kind=turn&order=desc')).map((row) => row.type)).toEqual(['turn-refuse', 'model-fail']);
  });

  it('pages newest first with ?order=desc&before=, and filters by a comma-separated type list', async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) await spawn(name);
    const first = await audit('?order=desc&limit=2');
    expect(first.map((row) => row.data['name'])).toEqual(['e', 'd']);
    const second = await audit(`?order=desc&limit=2&before=${first.at(-1)?.seq ?? 0}`);
    expect(second.map((row) => row.data['name'])).toEqual(['c', 'b']);
    const third = await audit(`?order=desc&limit=2&before=${second.at(-1)?.seq ?? 0}`);
    expect(third.map((row) => row.data['name'])).toEqual(['a']);

    await api.host.kernel.suspend('c');
    expect((await audit('?type=agent-suspend,agent-kill')).map((row) => row.data['name'])).toEqual(['c']);
    expect(await audit('?kind=agent&outcome=ok')).toEqual([]);
  });

  it('answers 400 naming the parameter for an unknown kind, outcome or order', async () => {
    for (const [query, name] of [
      ['kind=everything', 'kind'],
      ['outcome=meh', 'outcome'],
      ['order=sideways', 'order'],
      ['before=0', 'before'],
    ] as const) {
      const response = await api.request(`/api/audit?${query}`);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(name);
    }
  });

  it('answers 400 naming the new name for a type filter by an old one, and the types for an unknown one (decision 0072)', async () => {
    const refused = async (query: string): Promise<string> => {
      const response = await api.request(`/api/audit?${query}`);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('INVALID_REQUEST');
      return body.error.message;
    };
    expect(await refused('type=tool-finish,tool-denied')).toContain('event type "tool-denied" is now called "tool-deny"');
    expect(await refused('type=cot-trace')).toContain('"chain-of-thought-finish"');
    const unknown = await refused('type=agent-spawned');
    expect(unknown).toContain('unknown event type "agent-spawned"');
    expect(unknown).toContain('agent-spawn, agent-suspend');
  });
});

describe('GET /api/audit for a user key', () => {
  beforeEach(async () => {
    api = await startApi(dir.path, OWNER_AND_HELPER_KEYS);
  });

  it('pages newest first through the rows of the agents the key reaches only', async () => {
    const owner = { headers: { authorization: 'Bearer admin-secret' } };
    for (const name of ['helper-one', 'other', 'helper-two', 'helper-three']) {
      expect(
        (await api.request('/api/agents', { ...toml(agentToml(name, model.url)), headers: { ...owner.headers, 'content-type': 'application/toml' } })).status,
      ).toBe(201);
    }
    const helper = { headers: { authorization: 'Bearer helper-secret' } };
    const first = await audit('?order=desc&limit=2', helper);
    expect(first.map((row) => row.data['name'])).toEqual(['helper-three', 'helper-two']);
    expect((await audit(`?order=desc&before=${first.at(-1)?.seq ?? 0}`, helper)).map((row) => row.data['name'])).toEqual(['helper-one']);
  });
});

describe('GET /api/usage/series', () => {
  beforeEach(async () => {
    api = await startApi(dir.path);
  });

  it('adds tokens and cost up per hour, agent and model over the last 24 hours of the kernel clock', async () => {
    await spawn('spender');
    await spawn('saver');
    model.script([{ text: 'one', usage: { inputTokens: 7, outputTokens: 3 } }]);
    await api.request('/api/agents/spender/messages', json({ message: 'go' }));
    await api.host.clock.advance(2 * 3_600_000);
    model.script([{ text: 'two', usage: { inputTokens: 100, outputTokens: 50 } }]);
    await api.request('/api/agents/saver/messages', json({ message: 'go' }));

    const response = await api.request('/api/usage/series?range=24h');
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      since: number;
      until: number;
      step_ms: number;
      buckets: { start: number; agent: string; model: string; input_tokens: number; output_tokens: number; calls: number }[];
    };
    const now = api.host.clock.now();
    expect(body.step_ms).toBe(3_600_000);
    expect(body.until - body.since).toBe(86_400_000);
    expect(body.until).toBeGreaterThan(now);
    expect(body.until % 3_600_000).toBe(0);
    expect(body.buckets.map((bucket) => [bucket.agent, bucket.model, bucket.input_tokens, bucket.output_tokens, bucket.calls])).toEqual([
      ['spender', 'openai/gpt-4o', 7, 3, 1],
      ['saver', 'openai/gpt-4o', 100, 50, 1],
    ]);
    expect((body.buckets[1]?.start ?? 0) - (body.buckets[0]?.start ?? 0)).toBe(2 * 3_600_000);
    const saver = (await (await api.request('/api/usage/series?range=1h&agent=saver')).json()) as { step_ms: number; buckets: unknown[] };
    expect(saver.step_ms).toBe(300_000);
    expect(saver.buckets).toHaveLength(1);
  });

  it('answers 400 for a range mixed with since, or a step giving too many buckets', async () => {
    expect((await api.request('/api/usage/series?range=1h&since=5')).status).toBe(400);
    const tooMany = await api.request('/api/usage/series?since=0&until=100000000&step=1000');
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: { message: string } }).error.message).toContain('larger step');
  });
});

describe('GET /api/usage/today', () => {
  it("counts the daemon's day, midnight to midnight in [scheduler].timezone, not UTC's or a browser's", async () => {
    // The fake clock starts at 2026-01-01T00:00Z: 09:00 on 1 January in Tokyo.
    api = await startApi(dir.path, { config: { scheduler: { timezone: 'Asia/Tokyo' } } });
    await spawn('spender');
    model.script([{ text: 'yesterday in Tokyo', usage: { inputTokens: 7, outputTokens: 3 } }]);
    await api.request('/api/agents/spender/messages', json({ message: 'go' }));
    // 16:00Z: 01:00 on 2 January in Tokyo, still 1 January in UTC.
    await api.host.clock.advance(16 * 3_600_000);
    model.script([{ text: 'today in Tokyo', usage: { inputTokens: 100, outputTokens: 50 } }]);
    await api.request('/api/agents/spender/messages', json({ message: 'go' }));

    const response = await api.request('/api/usage/today?agent=spender');
    expect(response.status).toBe(200);
    const today = (await response.json()) as Record<string, unknown>;
    expect(today).toMatchObject({
      timezone: 'Asia/Tokyo',
      since: Date.parse('2026-01-01T15:00:00Z'),
      until: Date.parse('2026-01-02T15:00:00Z'),
      tokens: 150,
      input_tokens: 100,
      output_tokens: 50,
    });
    expect(today['cost_usd']).toBeGreaterThan(0);
    // Without an agent, every agent's; a query it does not know is refused.
    expect(((await (await api.request('/api/usage/today')).json()) as { tokens: number }).tokens).toBe(150);
    expect((await api.request('/api/usage/today?day=1')).status).toBe(400);
  });

  it('counts in UTC when no time zone is set', async () => {
    api = await startApi(dir.path);
    const today = (await (await api.request('/api/usage/today')).json()) as Record<string, unknown>;
    expect(today).toMatchObject({
      timezone: 'UTC',
      since: Date.parse('2026-01-01T00:00:00Z'),
      until: Date.parse('2026-01-02T00:00:00Z'),
      tokens: 0,
      cost_usd: 0,
    });
  });
});
