import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONTINUOUS_WAKE_MESSAGE } from '../../src/scheduler/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { TEST_KEYS, openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-scheduled-');
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

/** Moves the clock by `advance` until `condition` holds, letting real I/O (a request to the model server) go on between steps. */
async function until(condition: () => boolean, advance: () => Promise<void>): Promise<void> {
  for (let step = 0; step < 2_000 && !condition(); step += 1) {
    await advance();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('scheduled agents in a host that runs schedules', () => {
  it('wakes a continuous agent every interval on the clock, and stops when it is suspended', async () => {
    host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true });
    await host.kernel.spawn(manifest(`name = "watcher"\n[schedule]\nmode = "continuous"\ninterval_seconds = 60\n${model()}`));
    server.script([{ text: 'nothing to do' }, { text: 'still nothing' }]);
    await host.clock.advance(59_000);
    expect(server.requests).toHaveLength(0);
    await until(
      () => server.requests.length === 1,
      () => host.clock.advance(1_000),
    );
    expect(JSON.stringify(server.requests[0]?.body['messages'])).toContain(CONTINUOUS_WAKE_MESSAGE);
    await until(
      () => server.requests.length === 2,
      () => host.clock.advance(1_000),
    );
    expect(server.requests).toHaveLength(2);
    await host.kernel.suspend('watcher');
    await host.clock.advance(600_000);
    expect(server.requests).toHaveLength(2);
  });

  it("holds a child's schedule while its parent is suspended, and wakes it again when the parent resumes, also across a restart", async () => {
    host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true });
    const timed = (name: string, extra = ''): string =>
      `name = "${name}"\n[schedule]\nmode = "continuous"\ninterval_seconds = 60\n${model()}\nsystem_prompt = "You are ${name}."\n${extra}`;
    await host.kernel.spawn(manifest(timed('boss', '[capabilities]\nagent_spawn = true\ntools = ["agent_spawn"]\n')));
    await host.kernel.spawn(manifest(timed('kid')), { parent: 'boss' });
    const callers = (): string[] =>
      server.requests.map((request) => ((request.body['messages'] as { content: string }[])[0]?.content ?? '').replace(/^You are (\w+)\.[\s\S]*$/, '$1'));
    server.script(Array.from({ length: 6 }, () => ({ text: 'nothing to do' })));
    await until(
      () => server.requests.length === 2,
      () => host.clock.advance(1_000),
    );
    expect(callers().sort()).toEqual(['boss', 'kid']);

    await host.kernel.suspend('boss');
    await host.clock.advance(600_000);
    expect(server.requests).toHaveLength(2);
    expect(host.kernel.get('kid').state).toBe('running');
    // A person may still talk to the child: only what it does unasked waits for its parent.
    expect((await host.kernel.send('kid', 'hello')).text).toBe('nothing to do');
    // A child spawned meanwhile gets what is its own (its workspace), not its schedule.
    await host.kernel.spawn(manifest(`name = "kid2"\n${model()}`), { parent: 'boss' });
    expect(existsSync(join(host.home.workspacesDir, 'boss', 'agents', 'kid2'))).toBe(true);

    await host.close();
    host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true });
    await host.clock.advance(600_000);
    expect(server.requests).toHaveLength(3);

    await host.kernel.resume('boss');
    await until(
      () => server.requests.length === 5,
      () => host.clock.advance(1_000),
    );
    expect(callers().slice(3).sort()).toEqual(['boss', 'kid']);
  });

  it('does not wake anything in a host that does not run schedules (a CLI command)', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(`name = "watcher"\n[schedule]\nmode = "continuous"\ninterval_seconds = 1\n${model()}`));
    await host.clock.advance(60_000);
    expect(server.requests).toHaveLength(0);
  });

  it('wakes a proactive agent when another agent is spawned', async () => {
    host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true });
    await host.kernel.spawn(
      manifest(
        `name = "greeter"\n[schedule]\nmode = "proactive"\n[[schedule.triggers]]\nevent = "agent_spawned"\nmessage = "Someone new arrived."\n${model()}`,
      ),
    );
    server.script([{ text: 'Welcome!' }]);
    await host.kernel.spawn(manifest('name = "newcomer"'));
    await until(
      () => server.requests.length === 1,
      () => host.clock.advance(10),
    );
    expect(JSON.stringify(server.requests[0]?.body['messages'])).toContain('Someone new arrived.');
  });
});
