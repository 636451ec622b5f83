import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForgedToolView } from '../../src/forged-tools/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { APPROVE, DOUBLE_IT as double } from '../support/forge-requests.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-forged-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const OWNER = { authorization: 'Bearer admin-secret', 'content-type': 'application/json' };
const HELPER = { authorization: 'Bearer helper-secret', 'content-type': 'application/json' };

async function open(): Promise<Api> {
  api = await startApi(dir.path, {
    config: { ...OWNER_AND_HELPER_KEYS.config, default_model: { provider: 'openai', model: 'gpt-4o', base_url: model.url } },
    env: OWNER_AND_HELPER_KEYS.env,
  });
  for (const name of ['smith', 'helper-one']) {
    const spawned = await api.request('/api/agents', {
      method: 'POST',
      headers: { ...OWNER, 'content-type': 'application/toml' },
      body: agentToml(name, model.url, '[capabilities]\ntools = ["forge_tool"]\n[emergent]\n'),
    });
    expect(spawned.status).toBe(201);
  }
  return api;
}

describe('/api/tools/forged', () => {
  it('forges as an agent (201), lists and shows it, exports it redacted; a refusal is a 422 naming its stage', async () => {
    const server = await open();
    model.script([APPROVE]);
    const created = await server.request('/api/tools/forged', { method: 'POST', headers: OWNER, body: JSON.stringify({ agent: 'smith', request: double }) });
    expect(created.status).toBe(201);
    const tool = (await created.json()) as ForgedToolView;
    expect(tool).toMatchObject({ name: 'double_it', agent: 'smith', tier: 'session', mode: 'sandbox' });

    const listed = (await (await server.request('/api/tools/forged?agent=smith', { headers: OWNER })).json()) as ForgedToolView[];
    expect(listed.map((entry) => entry.id)).toEqual([tool.id]);
    expect(await (await server.request(`/api/tools/forged/${tool.id.slice(0, 8)}`, { headers: OWNER })).json()).toMatchObject({
      id: tool.id,
      verdicts: [{ role: 'creation', approved: true }],
    });

    const exported = await server.request(`/api/tools/forged/${tool.id}/export`, { headers: OWNER });
    expect(exported.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
    const yaml = await exported.text();
    expect(yaml).toContain('schema: agentos.emergent-tool.v1');
    expect(yaml).toContain('redacted: true');

    const imported = await server.request('/api/tools/forged/import', {
      method: 'POST',
      headers: OWNER,
      body: JSON.stringify({ agent: 'helper-one', document: yaml }),
    });
    expect(imported.status).toBe(422);
    expect(await imported.json()).toMatchObject({
      error: { code: 'FORGE_REFUSED', details: { stage: 'request' }, message: expect.stringContaining('was exported redacted') as unknown },
    });

    model.script([{ text: JSON.stringify({ approved: false, confidence: 0.2, issues: ['it does not validate n'] }) }]);
    const refused = await server.request('/api/tools/forged', {
      method: 'POST',
      headers: OWNER,
      body: JSON.stringify({ agent: 'smith', request: { ...double, name: 'double_again' } }),
    });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({
      error: {
        code: 'FORGE_REFUSED',
        message: 'the tool was refused at the judge stage: the judge refused it: it does not validate n',
        details: { stage: 'judge', verdict: { approved: false } },
      },
    });
  });

  it('lets only the owner forge, promote and demote; a user key sees only the tools of agents it reaches; an unknown id is a 404', async () => {
    const server = await open();
    model.script([APPROVE]);
    const tool = (await (
      await server.request('/api/tools/forged', { method: 'POST', headers: OWNER, body: JSON.stringify({ agent: 'smith', request: double }) })
    ).json()) as ForgedToolView;
    const forge = await server.request('/api/tools/forged', {
      method: 'POST',
      headers: HELPER,
      body: JSON.stringify({ agent: 'helper-one', request: double }),
    });
    expect(forge.status).toBe(403);
    expect((await server.request(`/api/tools/forged/${tool.id}/promote`, { method: 'POST', headers: HELPER })).status).toBe(403);
    expect(await (await server.request('/api/tools/forged', { headers: HELPER })).json()).toEqual([]);
    // A tool the key may not see is answered as one that does not exist, by its id or a prefix of it: its name and agent stay unsaid.
    for (const id of [tool.id, tool.id.slice(0, 4)]) {
      const hidden = await server.request(`/api/tools/forged/${id}`, { headers: HELPER });
      expect(hidden.status).toBe(404);
      const text = await hidden.text();
      expect(text).toContain(`no forged tool has the id \\"${id}\\"`);
      expect(text).not.toContain('smith');
      expect(text).not.toContain(tool.name);
    }
    expect((await server.request('/api/tools/forged/0000ffff', { headers: OWNER })).status).toBe(404);

    const demoted = await server.request(`/api/tools/forged/${tool.id}/demote`, {
      method: 'POST',
      headers: OWNER,
      body: JSON.stringify({ reason: 'not needed' }),
    });
    expect(await demoted.json()).toMatchObject({ status: 'demoted', statusReason: 'not needed' });
  });
});
