import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type Host, openHost } from '../../src/host/index.ts';
import { daemonLogFormat } from '../../src/cli/commands/daemon-commands.ts';
import { createHttpApp } from '../../src/http/index.ts';
import { createLogger } from '../../src/logging/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { loadAi } from '../../src/runtime/index.ts';
import { settleWithClock } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

/** What a logger wrote, line by line. */
function collector(): { lines: string[]; write: (text: string) => void } {
  const lines: string[] = [];
  return { lines, write: (text) => lines.push(...text.split('\n').filter((line) => line !== '')) };
}

/** How often `"key":` stands in a raw JSON line (JSON.parse would hide a repeated key). */
function countKey(line: string, key: string): number {
  return line.split(`"${key}":`).length - 1;
}

/** A loopback port nothing listens on: a model there is unreachable at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe("the daemon's logger", () => {
  it('writes each key once when a child repeats a binding or a call repeats one (regression: "component" twice in one record)', () => {
    const out = collector();
    const logger = createLogger({ level: 'info', sink: out });
    const run = logger.child({ component: 'kernel' }).child({ component: 'message-flow' }).child({ agentId: 'a1', runId: 'r1' });
    run.warn({ agentId: 'a1', model: 'openai/gpt-4o' }, 'model call failed');
    expect(out.lines).toHaveLength(1);
    const line = out.lines[0] ?? '';
    for (const key of ['component', 'agentId', 'runId', 'model', 'msg', 'level', 'time']) expect(countKey(line, key), key).toBe(1);
    expect(JSON.parse(line)).toMatchObject({
      level: 40,
      component: 'message-flow',
      agentId: 'a1',
      runId: 'r1',
      model: 'openai/gpt-4o',
      msg: 'model call failed',
    });
  });

  it("prints one readable line per record in pretty format: time, level, source, message, the fields that add something, and an error's message without its stack", () => {
    const out = collector();
    const logger = createLogger({ level: 'info', sink: out, format: 'pretty' });
    const http = logger.child({ component: 'http' });
    http.warn({ code: 'STORE_BUSY', status: 503, note: null }, 'an HTTP request failed: the store is busy');
    http.error({ err: new Error('disk full') }, 'could not write the session');
    logger.info({ url: 'http://127.0.0.1:4200', agents: 2 }, 'Loom is listening at http://127.0.0.1:4200.');
    logger.debug({}, 'not shown at info');
    expect(out.lines).toHaveLength(3);
    expect(out.lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: http: an HTTP request failed: the store is busy \{"code":"STORE_BUSY","status":503\}$/);
    expect(out.lines[1]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] ERROR: http: could not write the session \(disk full\)$/);
    // The URL is in the message already; the agent count is not.
    expect(out.lines[2]).toMatch(/INFO: Loom is listening at http:\/\/127\.0\.0\.1:4200\. \{"agents":2\}$/);
    expect(out.lines.join('\n')).not.toContain('    at ');
  });

  it('appends JSON lines to the log file at its level, whatever the console shows', async () => {
    const dir = await makeTempDir('loom-log-');
    try {
      const file = join(dir.path, 'logs', 'daemon.log');
      const out = collector();
      const logger = createLogger({ level: 'info', sink: out, format: 'pretty', file });
      logger.child({ component: 'http' }).warn({ err: new Error('boom') }, 'request failed');
      logger.debug({}, 'below the level');
      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 40, component: 'http', msg: 'request failed', err: { message: 'boom', type: 'Error' } });
      expect(out.lines[0]).toContain('WARN: http: request failed (boom)');
    } finally {
      await dir.remove();
    }
  });

  it('writes nothing to the console in format none, only to the file', async () => {
    const dir = await makeTempDir('loom-log-');
    try {
      const file = join(dir.path, 'daemon.log');
      const out = collector();
      createLogger({ level: 'info', sink: out, format: 'none', file }).info({}, 'started');
      expect(out.lines).toEqual([]);
      expect(await readFile(file, 'utf8')).toContain('"msg":"started"');
    } finally {
      await dir.remove();
    }
  });
});

describe('daemonLogFormat()', () => {
  const io = (stdoutIsTerminal: boolean, env: Record<string, string> = {}) => ({
    stdout: () => undefined,
    stderr: () => undefined,
    stdin: process.stdin,
    env,
    cwd: '/',
    stdoutIsTerminal,
  });

  it('prints readable lines at a terminal and JSON lines to a pipe, unless the flag or LOOM_LOG_FORMAT says otherwise', () => {
    expect(daemonLogFormat(io(true))).toBe('pretty');
    expect(daemonLogFormat(io(false))).toBe('json');
    expect(daemonLogFormat(io(true), 'json')).toBe('json');
    expect(daemonLogFormat(io(true, { LOOM_LOG_FORMAT: 'json' }))).toBe('json');
    expect(daemonLogFormat(io(false, { LOOM_LOG_FORMAT: 'pretty' }))).toBe('pretty');
    expect(daemonLogFormat(io(false, { LOOM_LOG_FORMAT: 'json' }), 'pretty')).toBe('pretty');
    expect(() => daemonLogFormat(io(false, { LOOM_LOG_FORMAT: 'xml' }))).toThrow('LOOM_LOG_FORMAT: expected one of auto, json, pretty, got "xml"');
  });
});

describe("a failed model call in the daemon's log", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: Host;
  const out = collector();
  const clock = createFakeClock();

  beforeAll(async () => {
    // What the first turn loads (the AI SDK, the Ollama provider's client) is loaded before the fake
    // clock is stepped: loading takes real time, in which a busy machine let the stepping run the
    // clock past the test's limit before the retries' backoff was scheduled (a CI run timed out).
    await Promise.all([loadAi(), import('@ai-sdk/openai-compatible')]);
  });

  beforeEach(async () => {
    dir = await makeTempDir('loom-model-log-');
    out.lines.length = 0;
    const logger = createLogger({ level: 'info', sink: out });
    host = await openHost({ home: resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, dir.path), config: ConfigSchema.parse({}), env: {}, logger, clock });
    const port = await closedPort();
    await host.kernel.spawn(
      parseManifest(`name = "offline"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\nbase_url = "http://127.0.0.1:${port}/v1"\n`, { source: 'test' })
        .manifest,
    );
  });

  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const warnings = (): Record<string, unknown>[] =>
    out.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((record) => (record['level'] as number) >= 40);

  it('is one warning naming the model and the cause, without a stack, when a request fails with 502 (regression: three warnings and a stack trace)', async () => {
    const app = createHttpApp({
      kernel: host.kernel,
      config: ConfigSchema.parse({}),
      env: {},
      clock,
      logger: createLogger({ level: 'info', sink: out }),
      clientAddress: () => '127.0.0.1',
    });
    const response = await settleWithClock(
      clock,
      Promise.resolve(
        app.request('/api/agents/offline/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hi' }),
        }),
      ),
    );
    expect(response.status).toBe(502);
    const records = warnings();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      level: 40,
      model: 'ollama/llama3.2',
      attempt: 3,
      msg: expect.stringMatching(/^model call to "ollama\/llama3\.2" failed \(3 attempts\): Cannot connect to API/) as string,
    });
    expect(out.lines.join('\n')).not.toContain('stack');
  });

  it('is one warning when the reply streams too', async () => {
    const app = createHttpApp({
      kernel: host.kernel,
      config: ConfigSchema.parse({}),
      env: {},
      clock,
      logger: createLogger({ level: 'info', sink: out }),
      clientAddress: () => '127.0.0.1',
    });
    const streamed = async (): Promise<string> => {
      const response = await app.request('/api/agents/offline/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ message: 'hi' }),
      });
      return response.text();
    };
    const body = await settleWithClock(clock, streamed());
    expect(body).toContain('MODEL_CALL_FAILED');
    expect(warnings()).toHaveLength(1);
  });
});
