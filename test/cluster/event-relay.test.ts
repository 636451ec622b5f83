import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventRelay, type EventRelay } from '../../src/cluster/event-relay.ts';
import type { EventRecord } from '../../src/contracts/index.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/index.ts';
import { insertEvent } from '../../src/store/postgres-event-repository.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

// The relay on a real PostgreSQL server: two stores stand for two nodes writing to one database.

const postgres = useTestPostgres();
const open: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function twoNodes(): Promise<{ name: string; url: string; here: PostgresStore; there: PostgresStore }> {
  const { name, url } = await postgres.createDatabase();
  const here = await openPostgresStore({ url, origin: 'node-here' });
  open.push(here);
  const there = await openPostgresStore({ url, origin: 'node-there' });
  open.push(there);
  return { name, url, here, there };
}

function relayOn(url: string, store: PostgresStore, logger = createRecordingLogger()): { relay: EventRelay; delivered: EventRecord[]; resyncs: () => number } {
  const delivered: EventRecord[] = [];
  let resyncs = 0;
  const relay = createEventRelay({
    url,
    origin: 'node-here',
    logger,
    events: store.events,
    retryMs: 100,
    deliver: (event) => {
      delivered.push(event);
      return Promise.resolve();
    },
    resync: () => {
      resyncs += 1;
      return Promise.resolve();
    },
  });
  open.push({ close: () => relay.stop() });
  return { relay, delivered, resyncs: () => resyncs };
}

const event = (type: string, at: number): Omit<EventRecord, 'seq'> => ({ type, at, agentId: 'a1', data: { name: 'writer', n: at } });

describe('createEventRelay()', () => {
  it("hands on the other node's events in order, with their data, and skips its own, including those a session commit appends", async () => {
    const { url, here, there } = await twoNodes();
    const { relay, delivered } = relayOn(url, here);
    await relay.start();

    await there.events.append(event('agent-spawn', 1));
    await here.events.append(event('agent-spawn', 2));
    await Promise.all([there.events.append(event('turn-finish', 3)), there.events.append(event('turn-finish', 4))]);
    // A turn's commit appends its record in the session's transaction: announced the same way.
    await there.agents.create(
      { id: 'a1', name: 'writer', state: 'running', parentId: null, sessionId: 's1', manifest: {}, createdAt: 5, updatedAt: 5 },
      { id: 's1', agentId: 'a1', messages: [], createdAt: 5, updatedAt: 5 },
    );
    await there.sessions.append('s1', [{ role: 'user', content: 'hi' }], { expectedRevision: 0, updatedAt: 6, events: [event('turn-finish', 6)] });

    await waitFor('four events', () => delivered.length === 4);
    // Its own event (at 2) never comes: events are handed on in the order of commit, so one more of
    // the other node's, committed after it, comes next.
    await there.events.append(event('turn-finish', 7));
    await waitFor('the fifth event', () => delivered.length === 5);
    expect(delivered.map((record) => record.at)).not.toContain(2);
    expect(delivered[4]?.at).toBe(7);
    // The two appended at once may commit in either order; each node sees the order of commit.
    expect([delivered[0]?.at, new Set([delivered[1]?.at, delivered[2]?.at]), delivered[3]?.at]).toEqual([1, new Set([3, 4]), 6]);
    expect(delivered[0]).toMatchObject({ type: 'agent-spawn', agentId: 'a1', data: { name: 'writer', n: 1 } });
  }, 30_000);

  it('hands on events in the order they committed, when a higher number committed first', async () => {
    const { url, here, there } = await twoNodes();
    // This node's relay holds its first delivery until `release`, so the next two arrive together.
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const delivered: number[] = [];
    const relay = createEventRelay({
      url,
      origin: 'node-here',
      logger: createRecordingLogger(),
      events: here.events,
      deliver: async (record) => {
        delivered.push(record.seq);
        if (delivered.length === 1) await held;
      },
      resync: () => Promise.resolve(),
    });
    open.push({ close: () => relay.stop() });
    await relay.start();
    // A second node listening, to know when both notifications have gone out.
    const watcher = relayOn(url, here);
    await watcher.relay.start();

    const first = await there.events.append(event('agent-spawn', 1));
    await waitFor('the first event, held', () => delivered.length === 1);
    // Another node's turn commit takes its number, then one appended after it commits first.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('BEGIN');
      const lower = await insertEvent(other, event('turn-finish', 2), 'node-there');
      const higher = await there.events.append(event('turn-finish', 3));
      await other.query('COMMIT');
      await waitFor('both announced', () => watcher.delivered.length === 3);

      release();
      await waitFor('both handed on', () => delivered.length === 3);
      expect(delivered).toEqual([first, higher, lower]);
    } finally {
      await other.end();
    }
  }, 30_000);

  it('listens again after its connection is cut, asks for a resync, and hears later events; a payload that is not <origin>:<seq> is ignored with a warning', async () => {
    const { name, url, here, there } = await twoNodes();
    const logger = createRecordingLogger();
    const { relay, delivered, resyncs } = relayOn(url, here, logger);
    await relay.start();
    expect(resyncs()).toBe(0);

    await postgres.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'loom-events-listen' AND datname = current_database()",
      [],
      name,
    );
    await waitFor('the warning', () =>
      logger.entries.some((entry) => entry.level === 'warn' && (entry.message ?? '').startsWith('stopped listening on "loom_events"')),
    );
    await waitFor('the resync', () => resyncs() === 1);

    await there.events.append(event('agent-kill', 7));
    await waitFor('the event after the cut', () => delivered.length === 1);
    expect(delivered[0]).toMatchObject({ type: 'agent-kill', at: 7 });

    await postgres.query("SELECT pg_notify('loom_events', 'not a number')", [], name);
    await waitFor('the warning on the payload', () => logger.entries.some((entry) => entry.message?.includes('that is not <origin>:<seq>') === true));
    expect(delivered).toHaveLength(1);
  }, 30_000);
});
