import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORD_RETRY_MS } from '../../src/channels/channel-answers.ts';
import type { ChannelMessageRecord } from '../../src/contracts/index.ts';
import { createFakeClock } from '../../src/clock/index.ts';
import { type FakeTelegramServer, startFakeTelegramServer } from '../support/fake-telegram-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { createJsonLogRecorder, openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { waitFor } from '../support/wait-for.ts';

// Two nodes on one PostgreSQL database, both configured with the same Telegram channel (long
// polling, against a local Bot API server): one node at a time polls it, the one holding its
// lease (decision 0061). Each node has its own fake clock, on which it renews the lease: a node
// whose clock stands still renews nothing, as a node that died.

const postgres = useTestPostgres();
const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let telegram: FakeTelegramServer;
const hosts: TestHost[] = [];
/** What each node wrote to its log (JSON records), by node name. */
const logs = new Map<string, Record<string, unknown>[]>();

const ADA = { id: 42, first_name: 'Ada' };
const ADA_CHAT = { id: 42, type: 'private' as const };
/** The lease: a node renews it every third of this, on its own clock. */
const LEASE_SECONDS = 15;
/** The database server's clock in ms, the one heartbeats and leases are measured on. */
const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

beforeEach(async () => {
  dir = await makeTempDir('loom-channel-lease-');
  telegram = await startFakeTelegramServer();
});
afterEach(async () => {
  for (const host of hosts.splice(0).reverse()) await host.close();
  await telegram.close();
  await dir.remove();
});

/** A node on `database` with the Telegram channel (Ada allowed, and `policy` more), in a home of its own. */
async function node(name: string, database: { name: string; url: string }, policy: Record<string, unknown> = {}): Promise<TestHost> {
  const config = {
    store: { url: database.url },
    cluster: { node_name: name, channel_lease_seconds: LEASE_SECONDS },
    channels: [
      {
        name: 'tg',
        kind: 'telegram',
        agent: 'helper',
        token_env: 'TELEGRAM_BOT_TOKEN',
        api_base_url: telegram.url,
        policy: { direct: 'allowlist', allow_users: ['42'], ...policy },
      },
    ],
  };
  const recorder = createJsonLogRecorder();
  logs.set(name, recorder.records);
  const host = await openTestHost(
    `${dir.path}/${name}`,
    config,
    { ...TEST_KEYS, TELEGRAM_BOT_TOKEN: telegram.token },
    { clock: createFakeClock(), logger: recorder.logger },
  );
  // Alive, as a daemon's heartbeat says (these hosts beat none): seen last an hour ahead, until it dies.
  await postgres.query(
    `INSERT INTO loom_nodes (id, name, version, schema_version, started_at, last_seen) VALUES ($1, $2, 'test', 0, ${NOW_MS}, ${NOW_MS} + 3600000)`,
    [host.cluster.id, name],
    database.name,
  );
  hosts.push(host);
  return host;
}

/** The one message a node stored, once it is there. */
async function firstStored(host: TestHost): Promise<ChannelMessageRecord> {
  const [message] = await waitFor('the message to be stored', async () => {
    const recent = await host.store.channels.recent('tg', 1);
    return recent.length === 1 ? recent : undefined;
  });
  if (message === undefined) throw new Error('no message stored');
  return message;
}

const stateOf = async (host: TestHost): Promise<string | undefined> => (await host.channels.list())[0]?.state;

/** The lease lapses on the database's clock (the one leases are measured on): its expiry moved a second into the past. */
async function lapse(database: string): Promise<void> {
  await postgres.query(
    "UPDATE loom_channel_leases SET lease_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE channel = 'tg'",
    [],
    database,
  );
}

/** Both nodes on one database, node A polling the channel and the agent spawned, node B standing by. */
async function twoNodes(): Promise<{ database: Awaited<ReturnType<typeof postgres.createDatabase>>; a: TestHost; b: TestHost }> {
  const database = await postgres.createDatabase();
  const a = await node('node-a', database);
  await a.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  const b = await node('node-b', database);
  await a.channels.start();
  await waitFor('node A to poll the channel', async () => (await stateOf(a)) === 'connected');
  await b.channels.start();
  await waitFor('node B to stand by', async () => (await stateOf(b)) === 'standby');
  return { database, a, b };
}

/** The running turn of the channel's message `platformId`, once it is journaled. */
function turnOf(database: string, platformId: string): Promise<string> {
  return waitFor(`the turn of message ${platformId} to be journaled`, async () => {
    const { rows } = await postgres.query(
      "SELECT id FROM turn_journal WHERE idempotency_key LIKE '%' || $1 AND state = 'running'",
      [`channel:tg:${platformId}`],
      database,
    );
    return (rows[0] as { id: string } | undefined)?.id;
  });
}

/** What the person sees in the chat: the bot's messages, as last edited. */
const chat = (): string[] => telegram.sent.map((message) => message.text);

/** Node `name`'s log lines (their messages) that contain `text`. */
const logged = (name: string, text: string): string[] =>
  (logs.get(name) ?? []).map((record) => String(record['msg'])).filter((message) => message.includes(text));

/** Node `name` has said, `times` times, that it leaves the message `platformId` to the node holding it, named. */
const leftTo = (name: string, platformId: string, holder: TestHost, times = 1): boolean =>
  logged(name, `message "${platformId}" is being answered by node ${holder.cluster.id}`).length >= times;

/**
 * The database refuses the next `count` settlings of a channel message (a status written), as a
 * store gone away a moment does; the claims, which write no status, go through.
 */
async function failSettles(database: string, count: number): Promise<void> {
  await postgres.query(
    `CREATE SEQUENCE settle_failures;
     CREATE FUNCTION fail_settle() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.status IS DISTINCT FROM OLD.status AND nextval('settle_failures') <= ${count} THEN RAISE EXCEPTION 'the store is away'; END IF;
         RETURN NEW;
       END $$;
     CREATE TRIGGER fail_settle BEFORE UPDATE ON channel_messages FOR EACH ROW EXECUTE FUNCTION fail_settle();`,
    [],
    database,
  );
}

/**
 * The database refuses to record a channel message's outcome with a note (as it refuses a reply
 * holding a NUL character); the outcome without one goes through. Returns how many it refused so far.
 */
async function failNotes(database: string): Promise<() => Promise<number>> {
  await postgres.query(
    `CREATE SEQUENCE note_failures;
     CREATE FUNCTION fail_note() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.status IS DISTINCT FROM OLD.status AND NEW.note IS NOT NULL THEN
           PERFORM nextval('note_failures');
           RAISE EXCEPTION 'the store refuses the note';
         END IF;
         RETURN NEW;
       END $$;
     CREATE TRIGGER fail_note BEFORE UPDATE ON channel_messages FOR EACH ROW EXECUTE FUNCTION fail_note();`,
    [],
    database,
  );
  return async () => {
    const { rows } = await postgres.query('SELECT last_value, is_called FROM note_failures', [], database);
    const row = rows[0] as { last_value: string; is_called: boolean };
    return row.is_called ? Number(row.last_value) : 0;
  };
}

/** B takes the channel over from A, which is slow (renews nothing): A's lease lapses, B's next look takes it. */
async function takeOver(database: string, b: TestHost): Promise<void> {
  await lapse(database);
  await b.clock.advance((LEASE_SECONDS * 1000) / 3);
  await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
}

describe('a channel that polls its platform, configured on two nodes of one database', () => {
  it('is polled by one node; the other stands by, and takes over once the lease lapses unrenewed, the first then stopping', async () => {
    const { database, a, b } = await twoNodes();
    expect((await postgres.query('SELECT channel FROM loom_channel_leases', [], database.name)).rows).toEqual([{ channel: 'tg' }]);

    model.script([{ text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('the message to be answered', async () => (await a.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(chat()).toEqual(['Hello Ada.']);
    // B, a renewal later, still stands by: A holds the lease.
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    expect(await stateOf(b)).toBe('standby');

    // A stops renewing (its clock stands still, as a dead node's would): once the lease lapses, B's next look takes it.
    await lapse(database.name);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
    // A, at its next renewal, finds the lease B's and stops polling.
    await a.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node A to stand by', async () => (await stateOf(a)) === 'standby');

    model.script([{ text: 'Still here.' }]);
    telegram.push(ADA_CHAT, ADA, 'Are you there?');
    await waitFor('the second message to be answered', async () => {
      const recent = await b.store.channels.recent('tg', 2);
      return recent.length === 2 && recent.every((message) => message.status === 'answered');
    });
    expect(chat()).toEqual(['Hello Ada.', 'Still here.']);
    expect(model.requests).toHaveLength(2);
  }, 60_000);

  it('a message whose turn is taken over from its node (its lease lapsed while it ran) gets the reply of the node that finished the turn, not an error', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    // Node A's model call is held (a long pause); node B, taking the turn over, is answered at once.
    model.script([{ text: 'Words of a turn node A no longer holds.', gate }, { text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    const message = await firstStored(a);
    const turnId = await turnOf(database.name, message.platformId);
    await waitFor("node A's model call", () => model.requests.length === 1);

    // A's lease on the turn lapsed: B takes it over (as its look for lapsed turns does) and finishes it.
    await postgres.query('UPDATE turn_journal SET node_id = $1 WHERE id = $2', [b.cluster.id, turnId], database.name);
    expect(await b.kernel.resumeTurn(turnId)).toBe(true);
    await waitFor('node B to finish the turn', async () => {
      const { rows } = await postgres.query('SELECT state FROM turn_journal WHERE id = $1', [turnId], database.name);
      return (rows[0] as { state: string } | undefined)?.state === 'done';
    });

    // A's model answers (its words streamed to the chat); its commit is refused (TURN_TAKEN_OVER).
    // A asks again, on its clock, by the message's key, and the words it streamed become B's reply.
    release();
    const settled = async (): Promise<string | undefined> => {
      const status = (await a.store.channels.get('tg', message.platformId))?.status;
      return status === 'received' ? undefined : status;
    };
    await waitFor('node A to wait for the turn (or give the message up)', async () => a.clock.pending() >= 2 || (await settled()) !== undefined);
    await a.clock.advance(2_000);
    expect(await waitFor('the message to be settled', settled)).toBe('answered');
    expect(chat()).toEqual(['Hello Ada.']);
    expect(model.requests).toHaveLength(2);
  }, 60_000);

  it('a message the node that polled the channel answers after its lease lapsed (it was slow) is not answered again by the node that took the channel over', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [message] = await a.store.channels.recent('tg', 1);

    // A, slow, renews nothing: its channel lease lapses and B takes the channel over. B answers
    // what is stored unanswered: the message, whose turn runs on A still, so B waits for it.
    await lapse(database.name);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
    await waitFor('node B to leave the message to node A, answering it', () => leftTo('node-b', message?.platformId ?? '', a));

    // A's turn ends; A delivers its reply. B, asking again, gets the same turn's reply, and the
    // message already answered.
    release();
    await waitFor('node A to answer the message', async () => (await a.store.channels.get('tg', message?.platformId ?? ''))?.status === 'answered');
    await b.clock.advance(2_000);
    await b.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    expect((await b.store.channels.get('tg', message?.platformId ?? ''))?.status).toBe('answered');
    expect(model.requests).toHaveLength(1);
  }, 60_000);

  it('a message the node that polled the channel is answering when its lease lapses (slow) gets one reply: the node that took the channel over leaves it to that node', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [message] = await a.store.channels.recent('tg', 1);
    const platformId = message?.platformId ?? '';

    // A, slow, renews nothing: B takes the channel over and finds the message A is answering.
    await lapse(database.name);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
    await waitFor('node B to leave the message to node A', () => leftTo('node-b', platformId, a));

    // A's turn ends; the platform is away a moment when A puts its words on their way (the words
    // it streams, then its reply): A's reply waits for its next attempt, the message not settled yet.
    telegram.failSends(2);
    release();
    await waitFor('node A to wait to deliver its reply', () => logged('node-a', 'a reply could not be delivered; trying again').length === 1);
    expect((await a.store.channels.get('tg', platformId))?.status).toBe('received');

    // B looks again meanwhile: the message is A's to answer, A alive. A delivers; B, looking
    // again, finds it answered.
    await b.clock.advance(2_000);
    await waitFor('node B to look at the message again', () => b.clock.pending() >= 2 || chat().length > 0);
    await a.clock.advance(1_000);
    await waitFor('node A to answer the message', async () => (await a.store.channels.get('tg', platformId))?.status === 'answered');
    await b.clock.advance(2_000);
    await b.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    expect(telegram.sent).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
  }, 60_000);

  it('a message whose node dies while answering it is answered once by the node that took the channel over', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    // A's model call is held (A dies meanwhile); B, taking its turn over, is answered at once.
    model.script([{ text: 'Words of a node that died.', gate }, { text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    const message = await firstStored(a);
    const platformId = message.platformId;
    const turnId = await turnOf(database.name, platformId);
    await waitFor("node A's model call", () => model.requests.length === 1);
    await lapse(database.name);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
    await waitFor('node B to leave the message to node A', () => leftTo('node-b', platformId, a));

    // A dies: its heartbeat stops (the last one long past), and B takes its turn over (as its look
    // for lapsed turns does) and finishes it.
    await postgres.query(`UPDATE loom_nodes SET last_seen = ${NOW_MS} - 60000 WHERE id = $1`, [a.cluster.id], database.name);
    await postgres.query('UPDATE turn_journal SET node_id = $1 WHERE id = $2', [b.cluster.id, turnId], database.name);
    expect(await b.kernel.resumeTurn(turnId)).toBe(true);
    await waitFor('node B to finish the turn', async () => {
      const { rows } = await postgres.query('SELECT state FROM turn_journal WHERE id = $1', [turnId], database.name);
      return (rows[0] as { state: string } | undefined)?.state === 'done';
    });

    // B, looking again, takes the message up (its node gone) and delivers the turn's reply.
    await b.clock.advance(2_000);
    await waitFor('node B to answer the message', async () => (await b.store.channels.get('tg', platformId))?.status === 'answered');
    expect(chat()).toEqual(['Hello Ada.']);

    // A was only paused: it comes back, its turn taken over, and delivers nothing more.
    release();
    await waitFor('node A to wait for the turn', () => a.clock.pending() >= 2);
    await a.clock.advance(2_000);
    await a.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    expect(model.requests).toHaveLength(2);
  }, 60_000);

  it('a message the node that polled the channel stored after another node took it over is answered by that node at its next renewal', async () => {
    const { database, a, b } = await twoNodes();
    await lapse(database.name);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');

    // A, not knowing yet, stores a message it took from the platform, then stops polling at its
    // next renewal, before it answers it.
    const at = a.clock.now();
    await a.store.channels.receive({
      channel: 'tg',
      platformId: '42:7',
      userId: '42',
      userName: 'Ada',
      conversationId: '42',
      conversationKind: 'direct',
      thread: null,
      mentioned: false,
      text: 'Hi!',
      status: 'received',
      note: null,
      receivedAt: at,
      updatedAt: at,
    });
    model.script([{ text: 'Hello Ada.' }]);
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to answer the message', async () => (await b.store.channels.get('tg', '42:7'))?.status === 'answered');
    expect(chat()).toEqual(['Hello Ada.']);
  }, 60_000);

  it('a message deleted on the platform while it is answered gets no reply, streamed or delivered', async () => {
    const { a } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [message] = await a.store.channels.recent('tg', 1);
    const platformId = message?.platformId ?? '';

    // Deleted on the platform meanwhile (as the adapters report it).
    expect(await a.store.channels.amend('tg', platformId, { withdrawn: 'deleted on the platform before it was answered' }, a.clock.now())).toBe(true);
    release();
    await a.channels.idle();
    expect(chat()).toEqual([]);
    expect(logged('node-a', 'was withdrawn while it was answered')).toHaveLength(1);
    expect(await a.store.channels.get('tg', platformId)).toMatchObject({ status: 'ignored', note: 'deleted on the platform before it was answered' });
  }, 60_000);

  it('a message whose answer could not be recorded at once is recorded by its node in the background, not answered again by the node that took the channel over', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [message] = await a.store.channels.recent('tg', 1);
    const platformId = message?.platformId ?? '';
    await takeOver(database.name, b);
    await waitFor('node B to leave the message to node A, naming it', () => leftTo('node-b', platformId, a));

    // A delivers its reply, but the store refuses to record it answered: A keeps the message, and
    // records it at its next try.
    await failSettles(database.name, 1);
    release();
    await waitFor('node A to fail to record it', () => logged('node-a', 'could not record it as answered').length === 1);
    await a.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    await a.clock.advance(RECORD_RETRY_MS);
    await waitFor('node A to record it answered', async () => (await a.store.channels.get('tg', platformId))?.status === 'answered');

    // B, looking again, finds it answered.
    await b.clock.advance(2_000);
    await b.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    expect(model.requests).toHaveLength(1);
  }, 60_000);

  it('a message whose delivered reply can never be recorded is not answered again by its node at its lease renewals', async () => {
    const database = await postgres.createDatabase();
    const a = await node('node-a', database);
    await a.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await a.channels.start();
    await waitFor('node A to poll the channel', async () => (await stateOf(a)) === 'connected');
    await failSettles(database.name, 1_000);
    model.script([{ text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('node A to fail to record its reply', () => logged('node-a', 'could not record it as answered').length === 1);
    await a.channels.idle();

    // Two lease renewals, each listing the channel's unanswered messages (what it takes up it answers before `idle`).
    for (let renewal = 0; renewal < 2; renewal++) {
      const sleeping = a.clock.pending();
      await a.clock.advance((LEASE_SECONDS * 1000) / 3);
      await waitFor('node A to renew its lease and sleep again', () => a.clock.pending() >= sleeping);
      await a.channels.idle();
    }
    expect(chat()).toEqual(['Hello Ada.']);
    expect(logged('node-a', 'could not record it as answered')).toHaveLength(1);
  }, 60_000);

  it("a stranger's message, or reply command, whose pairing prompt was shown and can never be recorded is not prompted again by its node at its lease renewals", async () => {
    const database = await postgres.createDatabase();
    const a = await node('node-a', database, { direct: 'pairing', approvers: ['42'] });
    await a.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await a.channels.start();
    await waitFor('node A to poll the channel', async () => (await stateOf(a)) === 'connected');
    await failSettles(database.name, 1_000);
    const EVE = { id: 43, first_name: 'Eve' };
    telegram.push({ id: 43, type: 'private' }, EVE, 'Hi!');
    telegram.push({ id: 43, type: 'private' }, EVE, 'approve 0123abcd');
    await waitFor('node A to prompt both', () => chat().length === 2);
    await a.channels.idle();

    // Two lease renewals, each listing the channel's unanswered messages (what it takes up it answers before `idle`).
    for (let renewal = 0; renewal < 2; renewal++) {
      const sleeping = a.clock.pending();
      await a.clock.advance((LEASE_SECONDS * 1000) / 3);
      await waitFor('node A to renew its lease and sleep again', () => a.clock.pending() >= sleeping);
      await a.channels.idle();
    }
    expect(chat()).toHaveLength(2);
    expect(chat().every((text) => text.startsWith("I can't talk with you here yet. Ask the owner of this Loom to run:"))).toBe(true);
    expect(model.requests).toHaveLength(0);
  }, 60_000);

  it('a message queued behind an answer under way when its node stops cleanly is answered by the node that takes the channel over, not by the stopping node', async () => {
    const { a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }, { text: 'It is noon.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    telegram.push(ADA_CHAT, ADA, 'What time is it?');
    await waitFor("node A's model call", () => model.requests.length === 1);
    await waitFor('both messages to be stored', async () => (await a.store.channels.recent('tg', 2)).length === 2);

    // A stops (its channel's lease given up); the answer under way ends, the message behind it is left.
    await a.channels.stop();
    release();
    await a.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    expect(model.requests).toHaveLength(1);

    // B takes the channel over at its next look, and answers the message A left.
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to answer the second message', () => chat().includes('It is noon.'));
    expect(chat()).toEqual(['Hello Ada.', 'It is noon.']);
    expect(logged('node-a', 'delivered the reply')).toHaveLength(1);
  }, 60_000);

  it("a message whose reply could not be recorded is recorded at its node's clean stop, not answered again by the node that takes the channel over", async () => {
    const { database, a, b } = await twoNodes();
    await failSettles(database.name, 1);
    model.script([{ text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('node A to fail to record its reply', () => logged('node-a', 'could not record it as answered').length === 1);
    await a.channels.idle();
    const [message] = await a.store.channels.recent('tg', 1);

    // A stops before its next try: it tries once more then, and the message is answered for good.
    await a.channels.stop();
    await a.channels.idle();
    expect(await a.store.channels.get('tg', message?.platformId ?? '')).toMatchObject({ status: 'answered', note: 'Hello Ada.' });
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to poll the channel', async () => (await stateOf(b)) === 'connected');
    await b.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
  }, 60_000);

  it('a message whose reply its stopping node could not record is given up at the stop: the node that takes the channel over answers it at once, not once that node is gone', async () => {
    const { database, a, b } = await twoNodes();
    // The answer's record, and the two tries of the stop (with its note, then without), are refused.
    await failSettles(database.name, 3);
    model.script([{ text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('node A to fail to record its reply', () => logged('node-a', 'could not record it as answered').length === 1);
    await a.channels.idle();
    const [message] = await a.store.channels.recent('tg', 1);
    const platformId = message?.platformId ?? '';

    await a.channels.stop();
    await a.channels.idle();
    expect(logged('node-a', `could not record message "${platformId}" as answered (tried 3 times)`)).toHaveLength(1);
    // B, A's heartbeat fresh still, takes the message up at once, and delivers the turn's reply again (as after a restart).
    await b.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node B to answer the message', async () => (await b.store.channels.get('tg', platformId))?.status === 'answered');
    expect(leftTo('node-b', platformId, a)).toBe(false);
    expect(chat()).toEqual(['Hello Ada.', 'Hello Ada.']);
    expect(model.requests).toHaveLength(1);
  }, 60_000);

  it('a message whose reply can never be recorded with its note is recorded without it after the last try, so that no node waits on it', async () => {
    const database = await postgres.createDatabase();
    const a = await node('node-a', database);
    await a.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await a.channels.start();
    await waitFor('node A to poll the channel', async () => (await stateOf(a)) === 'connected');
    const refused = await failNotes(database.name);
    model.script([{ text: 'Hello Ada.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('node A to fail to record its reply', () => logged('node-a', 'could not record it as answered').length === 1);
    await a.channels.idle();
    const [message] = await a.store.channels.recent('tg', 1);

    // Its three tries in the background, every RECORD_RETRY_MS, are refused; then it is recorded without its note.
    for (let retry = 1; retry <= 3; retry++) {
      await a.clock.advance(RECORD_RETRY_MS);
      await waitFor(`try ${retry} to be refused`, async () => (await refused()) === 1 + retry);
    }
    await waitFor('node A to record it answered', async () => (await a.store.channels.get('tg', message?.platformId ?? ''))?.status === 'answered');
    expect(await a.store.channels.get('tg', message?.platformId ?? '')).toMatchObject({ status: 'answered', note: null });
    expect(logged('node-a', 'without its note (the store refused it)')).toHaveLength(1);
    expect(chat()).toEqual(['Hello Ada.']);
  }, 60_000);

  it('a message queued behind an answer under way, claimed by its node meanwhile, is given up once the channel no longer runs there: the node that took it over answers it at once', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }, { text: 'It is noon.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    telegram.push(ADA_CHAT, ADA, 'What time is it?');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [second, first] = await waitFor('both messages to be stored', async () => {
      const recent = await a.store.channels.recent('tg', 2);
      return recent.length === 2 ? recent : undefined;
    });
    // A claims the second message while it waits (as when it took it up from a node gone).
    expect((await a.store.channels.claim('tg', second?.platformId ?? ''))?.held).toBe(true);

    // B takes the channel over and leaves both messages to A; A, at its next renewal, stops polling.
    await takeOver(database.name, b);
    await waitFor(
      'node B to leave both messages to node A',
      () => leftTo('node-b', first?.platformId ?? '', a) && leftTo('node-b', second?.platformId ?? '', a),
    );
    await a.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node A to stand by', async () => (await stateOf(a)) === 'standby');

    // A answers the first; the second's turn comes at A, its channel no longer running there: given up.
    release();
    await a.channels.idle();
    expect(chat()).toEqual(['Hello Ada.']);
    await b.clock.advance(2_000);
    await waitFor('node B to answer the second message', () => chat().includes('It is noon.'));
    await b.channels.idle();
    expect(chat()).toEqual(['Hello Ada.', 'It is noon.']);
  }, 60_000);

  it('a later message of a chat whose earlier message another node is answering is answered meanwhile, not held up behind it', async () => {
    const { database, a, b } = await twoNodes();
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    model.script([{ text: 'Hello Ada.', gate }, { text: 'It is noon.' }]);
    telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor("node A's model call", () => model.requests.length === 1);
    const [first] = await a.store.channels.recent('tg', 1);
    await takeOver(database.name, b);
    await waitFor('node B to leave the first message to node A', () => leftTo('node-b', first?.platformId ?? '', a));
    // A, at its next renewal, stops polling (it answers still): the next message reaches B.
    await a.clock.advance((LEASE_SECONDS * 1000) / 3);
    await waitFor('node A to stand by', async () => (await stateOf(a)) === 'standby');

    telegram.push(ADA_CHAT, ADA, 'What time is it?');
    await waitFor('node B to answer the second message', () => chat().includes('It is noon.'));
    release();
    await waitFor('node A to answer the first message', async () => (await a.store.channels.get('tg', first?.platformId ?? ''))?.status === 'answered');
    await b.clock.advance(2_000);
    await b.channels.idle();
    expect([...chat()].sort()).toEqual(['Hello Ada.', 'It is noon.']);
  }, 60_000);
});
