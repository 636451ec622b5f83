import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpClientManager } from '../../src/mcp/client/index.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { callTool, FILESYSTEM_BIN, FIXTURE_SERVER, makeManager, stdioEntry, toolNamed, waitForStatus } from './client-helpers.ts';
import { waitFor } from '../support/wait-for.ts';

let manager: McpClientManager | undefined;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loom-mcp-client-'));
});

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await rm(dir, { recursive: true, force: true });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('MCP client manager lifecycle', () => {
  it('reads a file in a temp dir through server-filesystem over stdio', async () => {
    await writeFile(join(dir, 'note.txt'), 'the contents of the note');
    ({ manager } = makeManager([stdioEntry('filesystem', [FILESYSTEM_BIN, dir])]));
    manager.start();
    await waitForStatus(manager, 'filesystem', 'connected');
    const result = await callTool(toolNamed(manager, 'mcp_filesystem_read_text_file'), { path: join(dir, 'note.txt') });
    expect(result.isError).toBeUndefined();
    expect(result.text).toContain('the contents of the note');
  });

  it('marks a server whose command does not exist failed, retries it with doubling backoff on the clock, and connects once the command appears', async () => {
    const logger = createRecordingLogger();
    const script = join(dir, 'start-server.sh');
    let clock;
    ({ manager, clock } = makeManager([{ ...stdioEntry('late', []), transport: { type: 'stdio', command: script, args: [] } }], process.env, logger));
    const failures = (): number => logger.entries.filter((entry) => entry.message === 'MCP server failed to connect').length;
    manager.start();
    await waitForStatus(manager, 'late', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/ENOENT/);
    expect(manager.tools()).toEqual([]);
    expect(failures()).toBe(1);

    await clock.advance(1_000);
    await waitFor('the second failure', () => failures() === 2);
    await clock.advance(1_999);
    expect(failures()).toBe(2);
    await clock.advance(1);
    await waitFor('the third failure', () => failures() === 3);

    await writeFile(script, `#!/bin/sh\nexec "${process.execPath}" "${FIXTURE_SERVER}"\n`);
    await chmod(script, 0o755);
    await clock.advance(4_000);
    await waitForStatus(manager, 'late', 'connected');
    expect(manager.tools().map((tool) => tool.name)).toContain('mcp_late_pid');
  });

  it('keeps other servers working while one fails to start', async () => {
    ({ manager } = makeManager([
      { ...stdioEntry('broken', []), transport: { type: 'stdio', command: join(dir, 'missing'), args: [] } },
      stdioEntry('fixture', [FIXTURE_SERVER]),
    ]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    await waitForStatus(manager, 'broken', 'failed');
    expect(manager.tools().every((tool) => tool.mcpServer === 'fixture')).toBe(true);
  });

  it('when the stdio child is killed mid-session, the next call gives an error result and the server reconnects after the backoff', async () => {
    let clock;
    ({ manager, clock } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    const pidTool = toolNamed(manager, 'mcp_fixture_pid');
    const pid = Number((await callTool(pidTool, {})).text);
    expect(isAlive(pid)).toBe(true);

    process.kill(pid, 'SIGKILL');
    await waitForStatus(manager, 'fixture', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/lost/);
    expect(manager.tools()).toEqual([]);
    const result = await callTool(pidTool, {});
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/not connected/);

    await clock.advance(1_000);
    await waitForStatus(manager, 'fixture', 'connected');
    const newPid = Number((await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).text);
    expect(newPid).not.toBe(pid);
  });

  it('when the server dies in the middle of a call, the call gives an error result and the server reconnects', async () => {
    let clock;
    ({ manager, clock } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    const result = await callTool(toolNamed(manager, 'mcp_fixture_crash'), {});
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/mcp_fixture_crash/);
    await waitForStatus(manager, 'fixture', 'failed');
    await clock.advance(1_000);
    await waitForStatus(manager, 'fixture', 'connected');
    expect((await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).isError).toBeUndefined();
  });

  it('refuses a reply over 10 MB with an error naming the limit and the size, and keeps the connection for the next call', async () => {
    ({ manager } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    const pid = (await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).text;
    const result = await callTool(toolNamed(manager, 'mcp_fixture_big'), {});
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/10 MB/);
    expect(manager.servers()[0]?.status).toBe('connected');
    // The same child answers the next call: nothing was dropped or remade.
    expect(await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).toEqual({ text: pid });
  });

  it('passes an aborted signal through to the server as a cancellation', async () => {
    ({ manager } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    const controller = new AbortController();
    const pending = callTool(toolNamed(manager, 'mcp_fixture_hang'), {}, controller.signal);
    controller.abort(new Error('the turn was cancelled'));
    expect(await pending).toEqual({ text: 'MCP tool "mcp_fixture_hang" was cancelled', isError: true });
    expect(manager.servers()[0]?.status).toBe('connected');
  });

  it('refreshes the tool list when the server sends tools/list_changed', async () => {
    ({ manager } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    expect(manager.tools().map((tool) => tool.name)).not.toContain('mcp_fixture_added');
    await callTool(toolNamed(manager, 'mcp_fixture_add_tool'), {});
    await waitFor('the added tool', () => manager?.tools().some((tool) => tool.name === 'mcp_fixture_added'));
    expect(await callTool(toolNamed(manager, 'mcp_fixture_added'), {})).toEqual({ text: 'added here' });
  });

  it('stop() kills the stdio children and ends the retries', async () => {
    let clock;
    ({ manager, clock } = makeManager([
      stdioEntry('fixture', [FIXTURE_SERVER]),
      { ...stdioEntry('broken', []), transport: { type: 'stdio', command: join(dir, 'missing'), args: [] } },
    ]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    await waitForStatus(manager, 'broken', 'failed');
    const pid = Number((await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).text);
    await manager.stop();
    await waitFor('the stdio child to be gone', () => !isAlive(pid));
    expect(clock.pending()).toBe(0);
    expect(manager.tools()).toEqual([]);
  });
});
