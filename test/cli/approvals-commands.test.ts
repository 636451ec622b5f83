import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import type { ApprovalView } from '../../src/http/index.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { openTestHost, TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { pendingApprovalRecord } from '../support/approval-record.ts';
import { EVERYTHING_BIN, stdioEntry } from '../mcp/client-helpers.ts';
import { waitFor } from '../support/wait-for.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-approvals-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

const loom = (args: string[]) => runCli(home, args, { env: TEST_KEYS });

function writerToml(name: string): string {
  return `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]\n`;
}

/** Resolves with the id of the next approval the kernel asks for. */
function nextApproval(kernel: Kernel): Promise<string> {
  return new Promise((resolve) => {
    const unsubscribe = kernel.events.subscribe((event) => {
      if (event.type !== 'approval-request') return;
      unsubscribe();
      resolve((event as { approvalId: string }).approvalId);
    });
  });
}

/** Starts a turn of `name` whose file_write waits for approval (not awaited); resolves once it waits. */
async function startWaitingTurn(
  kernel: Kernel,
  name: string,
  file: string,
  signal?: AbortSignal,
): Promise<{ approvalId: string; turn: Promise<{ text: string }> }> {
  // A cancelled earlier turn leaves its final reply unused in the script.
  model.reset();
  model.script([{ toolCalls: [{ name: 'file_write', input: { path: file, content: 'hello' } }] }, { text: `Finished ${file}.` }]);
  const asked = nextApproval(kernel);
  const turn = kernel.send(name, `write ${file}`, signal === undefined ? {} : { signal });
  // A turn that fails before asking would otherwise leave the test waiting for the approval.
  const approvalId = await Promise.race([asked, turn.then(() => Promise.reject(new Error('the turn finished without asking for approval')))]);
  return { approvalId, turn };
}

describe('loom approvals with no daemon running (in-process kernel)', () => {
  it('shows a request whose turn was cancelled as expired by cancel, never pending, and refuses to approve or deny it (exit 2)', async () => {
    const host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(writerToml('writer')));
    const cancel = new AbortController();
    const waiting = await startWaitingTurn(host.kernel, 'writer', 'a.txt', cancel.signal);
    cancel.abort(new Error('test over'));
    await waiting.turn.catch(() => undefined);
    await host.close();

    expect(await loom(['approvals', 'list'])).toMatchObject({ code: 0, stdout: expect.stringContaining('No pending approvals') as unknown });
    const all = JSON.parse((await loom(['approvals', 'list', '--all', '--json'])).stdout) as ApprovalView[];
    expect(all).toMatchObject([
      {
        id: waiting.approvalId,
        status: 'expired',
        decided_by: 'cancel',
        reason: 'the turn ended while this call waited for approval (test over); nothing was run — ask the agent again',
      },
    ]);
    for (const verb of ['approve', 'deny']) {
      const refused = await loom(['approvals', verb, waiting.approvalId]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`approval "${waiting.approvalId}" was already decided: expired by cancel (the turn ended while this call waited`);
    }
    expect(existsSync(join(home, 'workspaces', 'writer', 'a.txt'))).toBe(false);
  });

  it('closes a request a crashed process left pending as expired by restart when it boots, and exits 2 for an unknown id', async () => {
    expect(await loom(['approvals', 'approve', 'no-such-id'])).toMatchObject({ code: 2, stderr: 'error: no approval with id "no-such-id"\n' });
    const host = await openTestHost(dir.path);
    const agent = await host.kernel.spawn(manifest(writerToml('writer')));
    // What a crash leaves: the request stored as pending, with no process waiting for it.
    await host.store.approvals.create(
      pendingApprovalRecord('left-by-crash', host.clock.now(), { agentId: agent.id, input: { path: 'a.txt', content: 'hello' } }),
    );
    await host.close();

    const refused = await loom(['approvals', 'approve', 'left-by-crash']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'already decided: expired by restart (Loom restarted while this call waited for approval; nothing was run — ask the agent again)',
    );
  });

  it('shows help with examples for each subcommand', async () => {
    const help = await loom(['approvals', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('$ loom approvals list');
    expect((await loom(['approvals', 'deny', '--help'])).stdout).toContain('--reason <text>');
  });
});

describe('loom approvals while a daemon runs', () => {
  let daemon: RunningDaemon;
  beforeEach(async () => {
    daemon = await startDaemon({
      home: resolveLoomHome({ LOOM_HOME: home }, dir.path),
      config: ConfigSchema.parse({}),
      env: TEST_KEYS,
      logger: createSilentLogger(),
      version: 'test',
      port: 0,
    });
  });
  afterEach(async () => {
    await daemon.stop();
  });

  it('approve resumes the waiting turn in the daemon and the file is written; deny makes it go without', async () => {
    const { kernel } = daemon.host;
    await kernel.spawn(manifest(writerToml('writer')));
    const workspace = join(home, 'workspaces', 'writer');

    const first = await startWaitingTurn(kernel, 'writer', 'yes.txt');
    const table = await loom(['approvals', 'list']);
    expect(table.stdout).toMatch(/^ID\s+AGENT\s+TOOL\s+STATUS\s+WHEN\s+INPUT\n/);
    expect(table.stdout).toMatch(/writer\s+file_write\s+pending\s+expires \d{4}-/);
    expect(table.stdout).toContain('{"path":"yes.txt","content":"hello"}');
    const listed = JSON.parse((await loom(['approvals', 'list', '--json'])).stdout) as ApprovalView[];
    expect(listed).toMatchObject([{ id: first.approvalId, status: 'pending', input: { path: 'yes.txt' } }]);
    expect((await loom(['approvals', 'approve', first.approvalId, '--reason', 'fine'])).stdout).toBe(
      `approved file_write for writer (${first.approvalId}): fine\n`,
    );
    expect((await first.turn).text).toBe('Finished yes.txt.');
    expect(existsSync(join(workspace, 'yes.txt'))).toBe(true);

    const second = await startWaitingTurn(kernel, 'writer', 'no.txt');
    // A unique start of the id is enough, as with git's short hashes.
    expect((await loom(['approvals', 'deny', second.approvalId.slice(0, 8)])).code).toBe(0);
    expect((await second.turn).text).toBe('Finished no.txt.');
    expect(existsSync(join(workspace, 'no.txt'))).toBe(false);
    expect(JSON.parse((await loom(['approvals', 'list', '--all', '--json'])).stdout)).toMatchObject([
      { id: first.approvalId, status: 'approved', decided_by: 'local' },
      { id: second.approvalId, status: 'denied', decided_by: 'local' },
    ]);
  });

  it('answers a question an MCP server asks during a call with --answer, checked against its schema', async () => {
    await daemon.stop();
    const config = ConfigSchema.parse({ mcp_servers: [stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])] });
    daemon = await startDaemon({
      home: resolveLoomHome({ LOOM_HOME: home }, dir.path),
      config,
      env: TEST_KEYS,
      logger: createSilentLogger(),
      version: 'test',
      port: 0,
    });
    const { kernel } = daemon.host;
    await waitFor('the MCP server to connect', () => daemon.host.mcp?.servers()[0]?.status === 'connected');
    await kernel.spawn(
      manifest(`name = "asker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["mcp_everything_*"]\n`),
    );
    model.reset();
    model.script([{ toolCalls: [{ name: 'mcp_everything_trigger_elicitation_request', input: {} }] }, { text: 'Thanks.' }]);
    const asked = nextApproval(kernel);
    const turn = kernel.stream('asker', 'ask me');
    const results: string[] = [];
    const done = (async () => {
      for await (const event of turn) if (event.type === 'tool-result') results.push(event.text);
    })();
    const id = await asked;
    const refused = await loom(['approvals', 'approve', id, '--answer', 'name=42']);
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('/name must be string') as unknown });
    expect((await loom(['approvals', 'approve', id, '--answer', 'bad'])).stderr).toContain('--answer "bad": expected field=value');
    expect((await loom(['approvals', 'approve', id.slice(0, 8), '--answer', 'name=Ada Lovelace', '--answer', 'check=true'])).code).toBe(0);
    await done;
    expect(results[0]).toContain('- Name: Ada Lovelace');
    expect(results[0]).toContain('- Agreed to terms: true');
  });

  it('reaches the daemon LOOM_URL names, whatever home the CLI would use', async () => {
    await daemon.host.kernel.spawn(manifest(writerToml('remote-writer')));
    const elsewhere = join(dir.path, 'other-home');
    const listed = await runCli(elsewhere, ['agent', 'list', '--json'], { env: { ...TEST_KEYS, LOOM_URL: `${daemon.info.url}/` } });
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((agent) => agent.name)).toEqual(['remote-writer']);
  });
});
