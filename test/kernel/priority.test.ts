import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGING_GRANTS, type Priority, PriorityGate } from '../../src/kernel/priority-gate.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { waitFor } from '../support/wait-for.ts';
import { TEST_KEYS, openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

describe('PriorityGate', () => {
  /** Queues one call per priority behind a held slot, then frees it; each call served frees its slot at once. Returns the order they were served. */
  async function order(gate: PriorityGate, priorities: readonly Priority[]): Promise<string[]> {
    const release = await gate.acquire('normal');
    const served: string[] = [];
    const waits = priorities.map((priority, index) =>
      gate.acquire(priority).then((done) => {
        served.push(`${priority}#${index}`);
        done();
      }),
    );
    release();
    await Promise.all(waits);
    return served;
  }

  it('serves waiting calls critical, high, normal, low, first come first served among equals', async () => {
    const gate = new PriorityGate(1);
    expect(await order(gate, ['low', 'normal', 'critical', 'normal', 'high'])).toEqual(['critical#2', 'high#4', 'normal#1', 'normal#3', 'low#0']);
  });

  it('lets a low call that is passed over climb, so a stream of critical calls does not starve it', async () => {
    const gate = new PriorityGate(1);
    let release = await gate.acquire('critical');
    const served: string[] = [];
    void gate.acquire('low').then((done) => {
      served.push('low');
      done();
    });
    // Each time a slot frees, a new critical call is already waiting.
    for (let round = 0; round < 4 * AGING_GRANTS && !served.includes('low'); round += 1) {
      const next = gate.acquire('critical');
      release();
      release = await next;
      served.push('critical');
    }
    release();
    await waitFor('the low call to be served', () => served.includes('low'));
    expect(served.indexOf('low')).toBeLessThanOrEqual(3 * AGING_GRANTS);
  });
});

describe('priority orders agents waiting for a model-call slot', () => {
  const server = useScriptedModelServer();
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: TestHost;
  let logger: RecordingLogger;

  beforeEach(async () => {
    dir = await makeTempDir('loom-priority-');
    logger = createRecordingLogger();
    host = await openTestHost(dir.path, { models: { max_concurrent_calls: 1 } }, TEST_KEYS, { logger });
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const agent = (name: string, priority: string): string =>
    `name = "${name}"\npriority = "${priority}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "You are ${name}."\n`;
  const caller = (index: number): string =>
    ((server.requests[index]?.body['messages'] as { content: string }[])[0]?.content ?? '').replace(/^You are (\w+)\.[\s\S]*$/, '$1');

  it('gives the free slot to a critical agent before a low one that asked first, with [models].max_concurrent_calls = 1', async () => {
    for (const [name, priority] of [
      ['holder', 'normal'],
      ['slow', 'low'],
      ['urgent', 'critical'],
    ] as const)
      await host.kernel.spawn(manifest(agent(name, priority)));
    let answer = (): void => undefined;
    server.script([{ text: 'held', gate: new Promise<void>((resolve) => (answer = resolve)) }, { text: 'first' }, { text: 'second' }]);
    const held = host.kernel.send('holder', 'take your time');
    await waitFor("the holder's call to reach the model", () => server.requests.length === 1);
    const waits = (): number => logger.entries.filter((entry) => entry.message?.includes('waits for a slot') === true).length;
    const slow = host.kernel.send('slow', 'whenever');
    await waitFor('the low agent to wait for the slot', () => waits() === 1);
    const urgent = host.kernel.send('urgent', 'now');
    await waitFor('the critical agent to wait for the slot', () => waits() === 2);

    answer();
    await Promise.all([held, slow, urgent]);
    expect([0, 1, 2].map(caller)).toEqual(['holder', 'urgent', 'slow']);
  });
});
