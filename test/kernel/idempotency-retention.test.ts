import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kernelAs } from '../../src/kernel/index.ts';
import { KEY_PRUNE_INTERVAL_MS, KEY_PRUNE_RETRY_MS } from '../../src/kernel/turn-intake.ts';
import { IDEMPOTENCY_KEY_RETENTION_MS } from '../../src/kernel/turn-journal.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-key-retention-');
  host = await openTestHost(dir.path);
  await host.kernel.spawn(manifest(`name = "keyed"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`));
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

describe('idempotency keys in a running daemon', () => {
  it('are forgotten a day after their turn ended (within the hour after), without a restart', async () => {
    server.script([{ text: 'First answer.' }, { text: 'Other answer.' }, { text: 'A new answer.' }, { text: 'Later answer.' }]);
    const agentId = host.kernel.get('keyed').id;
    expect((await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' })).text).toBe('First answer.');
    // Within the day, a retry gets the turn the key started.
    await host.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS - 60_000);
    expect((await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' })).text).toBe('First answer.');
    expect(await host.store.turns.byKey(agentId, 'k-1')).toMatchObject({ state: 'done' });

    // Past the day (keys are forgotten at most once an hour, when a message with a key comes), the
    // next message with a key forgets it: the same key starts a turn of its own.
    await host.clock.advance(KEY_PRUNE_INTERVAL_MS);
    expect((await host.kernel.send('keyed', 'Something else', { idempotencyKey: 'k-2' })).text).toBe('Other answer.');
    expect(await host.store.turns.byKey(agentId, 'k-1')).toBeUndefined();
    expect((await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' })).text).toBe('A new answer.');
    expect(server.requests).toHaveLength(3);
  });

  it('forgets old keys beside the message: a failure to does not fail it, and a message with a key tries again a minute later', async () => {
    server.script([{ text: 'Answered anyway.' }, { text: 'Answered again.' }, { text: 'And again.' }]);
    const turns = host.store.turns;
    const prune = turns.prune.bind(turns);
    const tries: number[] = [];
    turns.prune = (before) => {
      tries.push(before);
      return tries.length === 1 ? Promise.reject(new Error('the database is locked')) : prune(before);
    };
    expect((await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' })).text).toBe('Answered anyway.');
    expect(tries).toHaveLength(1);
    // Not at once (a database that refuses would be asked on every message), but a minute later.
    expect((await host.kernel.send('keyed', 'Hello again', { idempotencyKey: 'k-2' })).text).toBe('Answered again.');
    expect(tries).toHaveLength(1);
    await host.clock.advance(KEY_PRUNE_RETRY_MS);
    expect((await host.kernel.send('keyed', 'Once more', { idempotencyKey: 'k-3' })).text).toBe('And again.');
    expect(tries).toHaveLength(2);
  });

  it('forgets a key already past its retention when the daemon starts, with the first message with a key', async () => {
    server.script([{ text: 'Before the restart.' }, { text: 'After it.' }]);
    const agentId = host.kernel.get('keyed').id;
    await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' });
    await host.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS + 60_000);
    // The same home and clock, a new daemon: nothing was running, so nothing resumes at start.
    await host.close();
    host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
    expect(await host.store.turns.byKey(agentId, 'k-1')).toMatchObject({ state: 'done' });
    await host.kernel.send('keyed', 'Something else', { idempotencyKey: 'k-2' });
    expect(await host.store.turns.byKey(agentId, 'k-1')).toBeUndefined();
  });
});

describe('the turn a key started, found without starting one (how an A2A task finds its turn after a restart)', () => {
  it('gives its outcome to a caller who may message the agent, in the conversation the key was used in, and starts no turn', async () => {
    server.script([{ text: 'First answer.' }]);
    const alice = { name: 'alice', role: 'user', agents: ['keyed'] } as const;
    await kernelAs(host.kernel, alice).send('keyed', 'Hello', { idempotencyKey: 'k-1', thread: 'a2a:ctx' });
    const found = await kernelAs(host.kernel, alice).keyedTurn('keyed', 'k-1', { thread: 'a2a:ctx' });
    expect(found?.state).toBe('done');
    expect((await found?.result())?.text).toBe('First answer.');
    // Another conversation, or another key's holder, holds no such turn; a key never used starts none.
    expect(await kernelAs(host.kernel, alice).keyedTurn('keyed', 'k-1', { thread: 'a2a:other' })).toBeUndefined();
    expect(await kernelAs(host.kernel, { ...alice, name: 'bob' }).keyedTurn('keyed', 'k-1', { thread: 'a2a:ctx' })).toBeUndefined();
    expect(await kernelAs(host.kernel, alice).keyedTurn('keyed', 'never-used', { thread: 'a2a:ctx' })).toBeUndefined();
    expect(server.requests).toHaveLength(1);
    // Asked as a caller that may not message the agent: refused, as its message would be.
    await expect(kernelAs(host.kernel, { name: 'eve', role: 'viewer', agents: ['*'] }).keyedTurn('keyed', 'k-1')).rejects.toThrow(
      /a viewer key \("eve"\) may not send messages/,
    );
    await expect(kernelAs(host.kernel, { ...alice, agents: ['other'] }).keyedTurn('keyed', 'k-1', { thread: 'a2a:ctx' })).rejects.toThrow(/may not/);
  });

  it('reads the turn again each time its outcome is asked: a turn running on another node when found gives its reply once it ended there', async () => {
    server.script([{ text: 'Finished elsewhere.' }]);
    await host.kernel.send('keyed', 'Hello', { idempotencyKey: 'k-1' });
    // As another node sees it while it runs there: its journal row running, with no outcome yet.
    const db = new DatabaseSync(host.home.databasePath);
    try {
      const ended = db.prepare("SELECT outcome, finished_at FROM turn_journal WHERE idempotency_key = 'k-1'").get();
      db.prepare("UPDATE turn_journal SET state = 'running', outcome = NULL, finished_at = NULL WHERE idempotency_key = 'k-1'").run();
      const found = await host.kernel.keyedTurn('keyed', 'k-1');
      expect(found?.state).toBe('running');
      await expect(found?.result()).rejects.toMatchObject({ code: 'TURN_RUNNING' });
      // The other node ends it.
      db.prepare("UPDATE turn_journal SET state = 'done', outcome = ?, finished_at = ? WHERE idempotency_key = 'k-1'").run(
        ended?.['outcome'] ?? null,
        ended?.['finished_at'] ?? null,
      );
      expect((await found?.result())?.text).toBe('Finished elsewhere.');
    } finally {
      db.close();
    }
  });
});
