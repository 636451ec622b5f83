import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { type DaemonProcess, useDaemonHome } from '../support/daemon-process.ts';
import { FIXTURE_SERVER } from '../mcp/client-helpers.ts';

const server = useScriptedModelServer();
const daemons = useDaemonHome('loom-stop-question-');
const startDaemon = (): Promise<DaemonProcess> => daemons.start();

/** A home whose config.toml runs the fixture MCP server (its `ask` tool asks a person for a name). */
async function writeConfig(): Promise<void> {
  await mkdir(daemons.home, { recursive: true });
  const config = `[[mcp_servers]]\nname = "fixture"\ntimeout_secs = 600\n[mcp_servers.transport]\ntype = "stdio"\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(FIXTURE_SERVER)}]\n`;
  await writeFile(join(daemons.home, 'config.toml'), config);
}

/** Spawns agent "asker", granted the fixture's `ask`, with `extra` manifest lines, once the server is connected. */
async function spawnAsker(url: string, extra = ''): Promise<void> {
  await waitFor(
    'the MCP server to connect',
    async () => {
      const { connected } = (await (await fetch(`${url}/api/mcp/servers`)).json()) as { connected: { name: string }[] };
      return connected.some((entry) => entry.name === 'fixture') ? true : undefined;
    },
    { everyMs: 50 },
  );
  const manifest = `name = "asker"\n[capabilities]\ntools = ["mcp_fixture_ask"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${extra}`;
  expect((await fetch(`${url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest })).status).toBe(201);
}

interface ApprovalView {
  id: string;
  tool: string;
  status: string;
  decided_by: string | null;
  reason: string | null;
}

const ask = (url: string): Promise<Response | undefined> =>
  fetch(`${url}/api/agents/asker/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'ask me' }),
  }).catch(() => undefined);

const pendingQuestion = (url: string): Promise<ApprovalView> =>
  waitFor('the question to be pending', async () => ((await (await fetch(`${url}/api/approvals`)).json()) as ApprovalView[])[0], { everyMs: 50 });

/** The request as the daemon's store holds it, read after the daemon has gone. */
async function storedApproval(id: string): Promise<unknown> {
  const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
  try {
    return await store.approvals.get(id);
  } finally {
    await store.close();
  }
}

describe("a daemon stopped while an MCP server's question waits for a person", () => {
  it('exits at once and the question reads as closed by the shutdown', async () => {
    await writeConfig();
    const daemon = await startDaemon();
    await spawnAsker(daemon.url);
    server.script([{ toolCalls: [{ name: 'mcp_fixture_ask', input: {} }] }, { text: 'ok' }]);
    const reply = ask(daemon.url);
    const question = await pendingQuestion(daemon.url);
    expect(question).toMatchObject({ tool: 'mcp_fixture_elicitation', status: 'pending' });

    daemon.child.kill('SIGTERM');
    // Within `loom stop`'s deadline of 15 s (the question's timeout is 5 minutes).
    expect(await outcomeWithin(daemon.exited, 15_000)).toEqual({ value: 0 });
    await reply;
    expect(await storedApproval(question.id)).toMatchObject({
      status: 'expired',
      decidedBy: 'shutdown',
      reason: 'Loom was stopped while this waited for a person; nothing was run — ask the agent again',
    });

    // The next daemon shows it so: closed by the shutdown, not left for a restart to close.
    const again = await startDaemon();
    const all = (await (await fetch(`${again.url}/api/approvals?status=all`)).json()) as ApprovalView[];
    expect(all.find((entry) => entry.id === question.id)).toMatchObject({ status: 'expired', decided_by: 'shutdown' });
    again.child.kill('SIGTERM');
    await again.exited;
  }, 60_000);

  it("closes a question when the call that asked it gives up, and then stops at once (it waited out the question's 5 minutes)", async () => {
    await writeConfig();
    const daemon = await startDaemon();
    // The call's time limit ends it while the question waits.
    await spawnAsker(daemon.url, '[tools.mcp_fixture_ask]\ntimeout_seconds = 1\n');
    server.script([{ toolCalls: [{ name: 'mcp_fixture_ask', input: {} }] }, { text: 'nobody answered' }]);
    const reply = ask(daemon.url);
    const question = await pendingQuestion(daemon.url);
    expect((await reply)?.status).toBe(200);

    daemon.child.kill('SIGTERM');
    expect(await outcomeWithin(daemon.exited, 15_000)).toEqual({ value: 0 });
    expect(await storedApproval(question.id)).toMatchObject({
      status: 'expired',
      decidedBy: 'withdrawn',
      reason: 'the question was withdrawn before anyone answered (timed out after 1 s); nothing was answered',
    });
    expect(daemon.output()).toContain('Loom stopped');
  }, 60_000);
});
