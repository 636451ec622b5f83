import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type Host, openHost } from '../../src/host/index.ts';
import { createLogger, LogRing } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();

describe('the log ring', () => {
  it('keeps the last entries, newest first, overwriting the oldest', () => {
    const ring = new LogRing(3);
    for (let index = 1; index <= 5; index += 1) ring.push({ at: index, level: 'info', category: 'loom.test', message: `m${index}` });
    expect(ring.entries().map((entry) => entry.message)).toEqual(['m5', 'm4', 'm3']);
    expect([ring.size, ring.capacity]).toEqual([3, 3]);
  });

  it('is filled by real log calls at info and above, with the subsystem as the category, whatever the console level', () => {
    const ring = new LogRing();
    const logger = createLogger({ level: 'silent', ring });
    logger.child({ subsystem: 'scheduler' }).info({ agentId: 'a1' }, 'woke agent');
    logger.child({ component: 'http' }).warn({}, 'slow request');
    logger.error({ err: new Error('disk full') }, 'could not write');
    logger.debug({}, 'too chatty');
    expect(ring.entries().map((entry) => [entry.level, entry.category, entry.message, entry.agentId])).toEqual([
      ['error', 'loom', 'could not write', undefined],
      ['warn', 'loom.http', 'slow request', undefined],
      ['info', 'loom.scheduler', 'woke agent', 'a1'],
    ]);
  });
});

describe('builtin:eventlog', () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: Host;
  let ring: LogRing;

  beforeEach(async () => {
    dir = await makeTempDir('loom-eventlog-');
    ring = new LogRing();
    host = await openHost({
      home: resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, dir.path),
      config: ConfigSchema.parse({}),
      env: TEST_KEYS,
      logger: createLogger({ level: 'silent', ring }),
      clock: createFakeClock(),
      logs: ring,
    });
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const analyst = (tools: string) =>
    manifest(
      `name = "log-analyst"\nmodule = "builtin:eventlog"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ${tools}\n`,
    );

  it('answers from the log buffer through its log tools, and offers the model no other tool', async () => {
    const view = await host.kernel.spawn(analyst('["get_recent_logs", "search_logs*", "get_log_*", "file_read"]'));
    const other = await host.kernel.spawn(manifest(`name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`));
    const logger = createLogger({ level: 'silent', ring });
    logger.child({ subsystem: 'scheduler' }).error({ agentId: other.id }, 'scheduled run of agent "worker" failed');
    // Records about the event-log agent itself are left out: it cannot feed on itself.
    logger.info({ agentId: view.id }, 'log-analyst turn started');
    expect(ring.entries().map((entry) => entry.message)).not.toContain('log-analyst turn started');

    server.script([{ toolCalls: [{ name: 'search_logs_by_level', input: { level: 'error' } }] }, { text: 'One error: the scheduled run of worker failed.' }]);
    const result = await host.kernel.send('log-analyst', 'any errors?');
    expect(result.text).toBe('One error: the scheduled run of worker failed.');
    const offered = ((server.requests[0]?.body['tools'] as { function: { name: string } }[] | undefined) ?? []).map((tool) => tool.function.name).sort();
    expect(offered).toEqual([
      'get_log_count',
      'get_log_stats',
      'get_recent_logs',
      'search_logs',
      'search_logs_by_category',
      'search_logs_by_level',
      'search_logs_by_time_range',
    ]);
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('ERROR loom.scheduler: scheduled run of agent \\"worker\\" failed');
  });

  it('refuses to spawn an event-log agent granted none of its log tools', async () => {
    await expect(host.kernel.spawn(analyst('["file_read"]'))).rejects.toThrow(
      "an event-log agent reads the daemon's log through its log tools, and its [capabilities].tools grants none of them",
    );
  });
});
