import type { JsonValue, SessionWriteOptions } from '../contracts/index.ts';
import { EVENT_CHANNEL } from './postgres-event-repository.ts';
import { type NamedStatement, type Parameter, type Queryable, queryNamed } from './postgres-connection.ts';
import { usageColumnArrays } from './postgres-usage-repository.ts';

/**
 * A turn's commit in one statement, so in one round trip and one transaction of its own (a
 * statement outside `BEGIN` commits by itself): the session's revision compared and raised (its
 * row locked by the update), the turn's messages numbered after the last one, its usage, its
 * journal closed, its audit events inserted and announced on `EVENT_CHANNEL`. Every insert reads
 * `bumped`, so when the session is not at the expected revision (or is gone) nothing is written
 * and no row comes back. Nor when the turn it closes is not running here any more: held by
 * another node, which took it over after this node's lease lapsed (decision 0061), or ended
 * there already (its row gone or done). Its row is locked first, so a takeover either committed
 * before (and is seen) or waits for this commit.
 *
 * Why the next message number is right: the statement's snapshot is taken before the update
 * waits for a writer holding the row; a writer that committed after the snapshot raised the
 * revision, so the update (which re-reads the row it waited for) no longer matches, and one that
 * committed before it is in the snapshot, its messages with it.
 */
const APPEND_AT_REVISION: NamedStatement = {
  name: 'loom_append_turn',
  text: `WITH journal AS (
      SELECT state, node_id FROM turn_journal WHERE id = $14 FOR UPDATE
    ), bumped AS (
      UPDATE sessions SET updated_at = $1, revision = revision + 1
      WHERE id = $2 AND revision = $3 AND ($14::text IS NULL OR EXISTS (SELECT FROM journal WHERE state = 'running' AND (node_id IS NULL OR node_id = $21)))
      RETURNING revision, (SELECT COALESCE(MAX(seq) + 1, 0) FROM session_messages WHERE session_id = $2) AS next
    ), added_messages AS (
      INSERT INTO session_messages (session_id, seq, message)
      SELECT $2, (bumped.next + item.ordinality - 1)::integer, item.message FROM bumped, unnest($4::text[]) WITH ORDINALITY AS item (message, ordinality)
    ), added_usage AS (
      INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage)
      SELECT item.* FROM bumped, unnest($5::text[], $6::bigint[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::double precision[], $13::text[]) AS item
    ), dropped_steps AS (
      DELETE FROM turn_steps WHERE turn_id = $14 AND EXISTS (SELECT FROM bumped)
    ), forgotten_turn AS (
      DELETE FROM turn_journal WHERE id = $14 AND idempotency_key IS NULL AND EXISTS (SELECT FROM bumped)
    ), done_turn AS (
      UPDATE turn_journal SET state = 'done', outcome = $15, finished_at = $1, node_id = NULL, lease_until = NULL WHERE id = $14 AND idempotency_key IS NOT NULL AND EXISTS (SELECT FROM bumped)
    ), added_events AS (
      INSERT INTO events (at, type, agent_id, data)
      SELECT item.at, item.type, item.agent_id, item.data FROM bumped, unnest($16::bigint[], $17::text[], $18::text[], $19::text[]) WITH ORDINALITY AS item (at, type, agent_id, data, ordinality)
      ORDER BY item.ordinality
      RETURNING seq
    )
    SELECT bumped.revision,
      (SELECT count(*) FROM (SELECT pg_notify('${EVENT_CHANNEL}', $20::text || ':' || added_events.seq::text) FROM added_events ORDER BY added_events.seq) AS announced) AS announced
    FROM bumped`,
};

/**
 * Appends `messages` to session `id` with the turn's usage, journal close and events, in one
 * statement run on `db` outside any transaction (see {@link APPEND_AT_REVISION}), if the
 * session is still at `expectedRevision` and the turn it closes is not held by another node than
 * `nodeId`. Returns its new revision, or undefined when it is not at that revision, does not
 * exist, or its turn was taken over (nothing was written: the caller tells which).
 */
export async function appendAtRevision(
  db: Queryable,
  id: string,
  messages: readonly JsonValue[],
  options: SessionWriteOptions & { expectedRevision: number; updatedAt: number },
  origin: string,
  nodeId: string,
): Promise<number | undefined> {
  const events = options.events ?? [];
  const values: Parameter[] = [
    options.updatedAt,
    id,
    options.expectedRevision,
    messages.map((message) => JSON.stringify(message)),
    ...usageColumnArrays(options.usage ?? []),
    options.closeTurn?.turnId ?? null,
    options.closeTurn === undefined ? null : JSON.stringify(options.closeTurn.outcome),
    events.map((event) => event.at),
    events.map((event) => event.type),
    events.map((event) => event.agentId),
    events.map((event) => JSON.stringify(event.data)),
    origin,
    nodeId,
  ];
  const [row] = (await queryNamed(db, APPEND_AT_REVISION, values)).rows;
  return row === undefined ? undefined : Number(row['revision']);
}
