import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { signWebhook, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../src/channels/webhook-channel.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { createHttpApp, startHttpServer } from '../../src/http/index.ts';
import { type Host, openHost } from '../../src/host/index.ts';
import { type KernelEvent, kernelEventLine } from '../../src/kernel/index.ts';
import { createLogger, createSilentLogger, LOG_RING_FLUSH_DELAY_MS, LogRing, persistLogRing } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, TEST_KEYS } from '../support/test-host.ts';
import { FIXTURE_SERVER, stdioEntry } from '../mcp/client-helpers.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

// What the event-log agent reads: the daemon's records at info, each kernel event worth asking
// about among them, kept across a restart.

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let clock: FakeClock;

beforeEach(async () => {
  dir = await makeTempDir('loom-eventlog-records-');
  clock = createFakeClock();
});
afterEach(async () => {
  await dir.remove();
});

const home = () => resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, dir.path);
const open = (ring: LogRing): Promise<Host> =>
  openHost({ home: home(), config: ConfigSchema.parse({}), env: TEST_KEYS, logger: createLogger({ level: 'silent', ring }), clock, logs: ring });
const worker = (extra = '') => manifest(`name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${extra}`);
const lines = (ring: LogRing): string[] =>
  ring
    .entries()
    .reverse()
    .map((entry) => `${entry.level} ${entry.category}: ${entry.message}`);

describe('kernel events in the daemon log', () => {
  it('logs spawn, turn start and end with outcome and duration, refused tools and quotas, and kill, at info with a category', async () => {
    const ring = new LogRing();
    const host = await open(ring);
    try {
      const view = await host.kernel.spawn(worker('[resources]\nmax_tokens_per_hour = 20\n'));
      server.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'ls' } }] }, { text: 'Done.' }]);
      await host.kernel.send('worker', 'list the files');
      await expect(host.kernel.send('worker', 'again')).rejects.toThrow();
      await host.kernel.kill(view.id);

      const logged = lines(ring);
      const at = (pattern: RegExp): number => logged.findIndex((line) => pattern.test(line));
      const expected = [
        /^info loom\.agents: spawned agent "worker"$/,
        /^info loom\.turns: message turn of agent "worker" \(via owner\) started$/,
        /^info loom\.tools: refused tool "shell_exec" to agent "worker" \(\w+\): /,
        /^info loom\.turns: message turn of agent "worker" \(via owner\) finished in \d+\.\d\d s: openai\/gpt-4o, 2 model calls, 30 tokens, \$\d\.\d{4}/,
        /^info loom\.quotas: message turn of agent "worker" \(via owner\) refused: (QUOTA_EXCEEDED|TOKEN_BUDGET_EXCEEDED): /,
        /^info loom\.agents: killed agent "worker" \(requested\)$/,
      ];
      const found = expected.map(at);
      expect(
        found.every((index) => index !== -1),
        logged.join('\n'),
      ).toBe(true);
      expect([...found].sort((a, b) => a - b)).toEqual(found);
      expect(
        ring
          .entries()
          .filter((entry) => entry.category === 'loom.agents')
          .every((entry) => entry.agentId === view.id),
      ).toBe(true);
    } finally {
      await host.close();
    }
  });
  it('logs MCP connects and disconnects and scheduled runs, naming the server and the agent', async () => {
    const ring = new LogRing();
    const host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('fixture', [FIXTURE_SERVER])] }, TEST_KEYS, {
      connectMcpServers: true,
      runSchedules: true,
      clock,
      logger: createLogger({ level: 'silent', ring }),
    });
    try {
      await waitFor('MCP server "fixture" to connect', () => host.mcp?.servers().find((entry) => entry.name === 'fixture')?.status === 'connected');
      await host.kernel.spawn(worker('[schedule]\nmode = "continuous"\ninterval_seconds = 60\n'));
      server.script([{ text: 'Nothing to do.' }]);
      await clock.advance(60_000);
      await waitFor('the scheduled turn to end', () => lines(ring).find((line) => line.includes('finished in')));
    } finally {
      await host.close();
    }
    const logged = lines(ring);
    expect(logged).toContainEqual(expect.stringMatching(/^info loom\.mcp-client: MCP server "fixture" connected \(\d+ tools?\)/));
    expect(logged).toContainEqual(expect.stringMatching(/^info loom\.scheduler: waking agent "worker" for a scheduled run \(continuous\)$/));
    expect(logged).toContainEqual(expect.stringMatching(/^info loom\.scheduler: scheduled run of agent "worker" \(continuous\) completed$/));
    expect(logged).toContainEqual(expect.stringMatching(/^info loom\.mcp-client: MCP server "fixture" disconnected: Loom stops/));
  });

  it('logs a channel delivery, naming the channel, the agent and the person', async () => {
    const receiver = createServer((request, response) => {
      request.resume().on('end', () => response.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const ring = new LogRing();
    const config = {
      channels: [
        {
          name: 'hooks',
          kind: 'webhook',
          agent: 'worker',
          secret_env: 'HOOK_SECRET',
          reply_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/replies`,
          policy: { direct: 'open' },
        },
      ],
    };
    const host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: 'whsec' }, { clock, logger: createLogger({ level: 'silent', ring }) });
    await host.kernel.spawn(worker());
    await host.channels.start();
    const api = await startHttpServer(
      createHttpApp({ kernel: host.kernel, config: ConfigSchema.parse(config), env: {}, clock, logger: createSilentLogger(), channels: host.channels }),
      { host: '127.0.0.1', port: 0 },
    );
    try {
      server.script([{ text: 'Hello Ada.' }]);
      const body = JSON.stringify({ id: 'm-1', user: { id: 'u-ada', name: 'Ada' }, conversation: { id: 'c-1' }, text: 'hello' });
      const timestamp = String(Math.floor(clock.now() / 1000));
      const posted = await fetch(`${api.url}/hooks/hooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
          [WEBHOOK_SIGNATURE_HEADER]: signWebhook('whsec', timestamp, body),
        },
        body,
      });
      expect(posted.status).toBeLessThan(300);
      await waitFor('the reply to be delivered', () => lines(ring).find((line) => line.includes('delivered the reply')));
      expect(lines(ring)).toContainEqual('info loom.channels: channel "hooks": delivered the reply of agent "worker" to Ada (1 message) (conversationId=c-1)');
    } finally {
      await api.close();
      await host.close();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe('kernelEventLine()', () => {
  it('words a held tool call, and gives an event type added later a line under the category its name starts with', () => {
    const tainted: KernelEvent = {
      type: 'tool-taint',
      at: 1,
      agentId: 'a1',
      name: 'worker',
      tool: 'shell_exec',
      sink: 'command',
      action: 'refuse',
      source: { tool: 'web_fetch', origin: 'https://example.com' },
      excerpt: 'rm',
    };
    expect(kernelEventLine(tainted)).toMatchObject({
      category: 'tools',
      message: 'held tool "shell_exec" of agent "worker": it carries text from https://example.com (by web_fetch) into command; refused',
    });
    const later = { type: 'schedule-run', at: 1, agentId: 'a1', name: 'worker' } as unknown as KernelEvent;
    expect(kernelEventLine(later)).toMatchObject({ category: 'schedule', message: 'schedule-run of agent "worker"', fields: { agentId: 'a1' } });
  });
});

describe('the log ring across a restart', () => {
  it('is written to its file off the hot path, read back at the next start, and bounded', async () => {
    const file = join(dir.path, 'logs', 'log-ring.jsonl');
    const ring = new LogRing(3);
    const persisted = await persistLogRing(ring, { file, clock });
    const logger = createLogger({ level: 'silent', ring });
    for (let index = 1; index <= 4; index += 1) logger.child({ subsystem: 'test' }).info({ server: 'github' }, `record ${index}`);
    // Nothing is written while records arrive; one append after the delay.
    expect(await readFile(file, 'utf8').catch(() => 'none')).toBe('none');
    await clock.advance(LOG_RING_FLUSH_DELAY_MS);
    await persisted.flush();
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(4);
    for (let index = 5; index <= 9; index += 1) logger.info({}, `record ${index}`);
    await persisted.close();
    // Past twice the capacity, the file holds the ring's records alone.
    expect((await readFile(file, 'utf8')).trim().split('\n').length).toBeLessThanOrEqual(6);

    const again = new LogRing(3);
    const reopened = await persistLogRing(again, { file, clock });
    expect(reopened.restored).toBe(3);
    expect(again.entries().map((entry) => entry.message)).toEqual(['record 9', 'record 8', 'record 7']);
    await reopened.close();
  });

  it("the event-log agent reads the records from before the daemon's restart", async () => {
    const file = join(home().logsDir, 'log-ring.jsonl');
    const first = new LogRing();
    const persisted = await persistLogRing(first, { file, clock });
    const before = await open(first);
    await before.kernel.spawn(worker());
    server.script([{ text: 'Hello.' }]);
    await before.kernel.send('worker', 'hello');
    await before.close();
    await persisted.close();

    const ring = new LogRing();
    const restored = await persistLogRing(ring, { file, clock });
    const after = await open(ring);
    try {
      // Its spawn, and its turn's start and end.
      expect(restored.restored).toBe(3);
      await after.kernel.spawn(
        manifest(
          `name = "log-analyst"\nmodule = "builtin:eventlog"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["get_recent_logs"]\n`,
        ),
      );
      server.script([{ toolCalls: [{ name: 'get_recent_logs', input: { count: 50 } }] }, { text: 'The worker was spawned and answered once.' }]);
      await after.kernel.send('log-analyst', 'what happened before the restart?');
      const shown = JSON.stringify(server.requests.at(-1)?.body['messages']);
      expect(shown).toContain('loom.agents: spawned agent \\"worker\\"');
      expect(shown).toMatch(/loom\.turns: message turn of agent \\"worker\\" \(via owner\) finished in/);
    } finally {
      await after.close();
      await restored.close();
    }
  });
});
