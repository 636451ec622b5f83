import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PackageRunView, PackageView } from '../../src/packages/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-packages-api-');
  api = await startApi(dir.path, { config: { ...packageConfig(model.url), ...OWNER_AND_HELPER_KEYS.config }, env: OWNER_AND_HELPER_KEYS.env });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const as = (key: string, method = 'GET', body?: unknown): RequestInit => ({
  method,
  headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});
const OWNER = 'admin-secret';
const HELPER = 'helper-secret';
const simple = (slug: string) => writePackage(dir.path, slug, { workflows: { job: bindingJson({ type: 'manual' }, [activityJson('work')]) } });

describe('/api/packages', () => {
  it('owners install; a user key sees, runs and reads the runs of only the packages its agents patterns reach', async () => {
    for (const slug of ['helper-brief', 'ops']) {
      const response = await api.request('/api/packages', as(OWNER, 'POST', { source: await simple(slug) }));
      expect(response.status).toBe(201);
      expect(((await response.json()) as PackageView).slug).toBe(slug);
    }
    model.script([{ text: 'brief' }, { text: 'ops' }]);
    expect((await api.request('/api/packages/ops/bindings/job/run', as(OWNER, 'POST', {}))).status).toBe(200);

    const listed = (await (await api.request('/api/packages', as(HELPER))).json()) as PackageView[];
    expect(listed.map((view) => view.slug)).toEqual(['helper-brief']);
    expect((await api.request('/api/packages/ops', as(HELPER))).status).toBe(403);
    expect((await api.request('/api/packages/ops/bindings/job/run', as(HELPER, 'POST', {}))).status).toBe(403);
    const install = await api.request('/api/packages', as(HELPER, 'POST', { source: await simple('helper-two') }));
    expect(install.status).toBe(403);
    expect(((await install.json()) as { error: { message: string } }).error.message).toBe(
      'a user key ("helper-bot") may not install packages; it needs the owner role',
    );

    const run = await api.request('/api/packages/helper-brief/bindings/job/run', as(HELPER, 'POST', { inputs: { topic: 'tides' } }));
    expect(run.status).toBe(200);
    expect((await run.json()) as PackageRunView).toMatchObject({ package: 'helper-brief', status: 'completed', inputs: { topic: 'tides' } });
    const runs = (await (await api.request('/api/packages/runs', as(HELPER))).json()) as PackageRunView[];
    expect(runs.map((entry) => entry.package)).toEqual(['helper-brief']);
    expect((await api.request('/api/packages/runs?package=ops', as(HELPER))).status).toBe(403);
  });

  it('answers bad input with a clear error and installs nothing', async () => {
    const missing = await api.request('/api/packages', as(OWNER, 'POST', {}));
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toContain('source');
    const broken = await writePackage(dir.path, 'broken', { workflows: { job: bindingJson({ type: 'schedule', cron: 'every day' }, [activityJson('a')]) } });
    const refused = await api.request('/api/packages', as(OWNER, 'POST', { source: broken }));
    expect(refused.status).toBe(400);
    expect((await refused.json()) as { error: { code: string; message: string } }).toMatchObject({
      error: { code: 'PACKAGE_INVALID', message: expect.stringContaining('workflows.job.trigger.cron: expected a 5-field cron expression') as string },
    });
    expect((await api.request('/api/packages/none', as(OWNER))).status).toBe(404);
    expect((await api.request('/api/packages/none/bindings/job/run', as(OWNER, 'POST', {}))).status).toBe(404);
    expect(((await (await api.request('/api/packages', as(OWNER))).json()) as unknown[]).length).toBe(0);
    expect(api.host.kernel.list()).toEqual([]);
  });
});
