import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadManifestFile } from '../../src/manifest/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { untilWorkflowState } from './workflow-state.ts';

/**
 * examples/models/project-lead.json, the scripted replies the README offers for the workflow
 * example, replayed for the example manifests on the default model: the workflow runs in the
 * background, so it is tried on a host (a daemon's kernel) rather than through the CLI in process.
 */
const server = useScriptedModelServer();
const examples = join(import.meta.dirname, '../../examples');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-example-workflow-');
  host = await openTestHost(dir.path, { default_model: { provider: 'openai-compatible', model: 'scripted', base_url: server.url } });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

describe('examples/models/project-lead.json', () => {
  it('plans two tasks for the assistant, runs them after "go", accepts each and sums up', async () => {
    const script = JSON.parse(await readFile(join(examples, 'models', 'project-lead.json'), 'utf8')) as { steps: Parameters<typeof server.script>[0] };
    server.script(script.steps);
    for (const agent of ['agents/assistant.json', 'agents/project-lead.toml'])
      await host.kernel.spawn((await loadManifestFile(join(examples, agent))).manifest);

    const planned = await host.kernel.send('project-lead', 'Summarise the notes in the workspace');
    expect(planned.text).toContain('- t2 [pending] Summarise them → assistant after t1');
    expect(planned.text).toContain('Say "go" to start');
    expect((await host.kernel.send('project-lead', 'go')).text).toContain('Starting: 2 tasks.');
    const done = await untilWorkflowState(host, 'project-lead', ['completed', 'failed']);
    expect(done.state).toBe('completed');
    expect(done.note).toContain('Both tasks are done: the assistant listed its notes and summarised them in three lines.');
    expect(server.requests).toHaveLength(6);
  });
});
