import type { DatabaseSync } from 'node:sqlite';
import { StoreError } from '../errors/index.ts';

/**
 * One step of a store's schema (SQLite's here, PostgreSQL's in `postgres-migrations.ts`).
 * `version` is the schema version once the step is applied (SQLite's `PRAGMA user_version`);
 * `sql` runs inside the step's transaction, so it must not open or end one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The statement that renames the audit log's event types to `<noun>-<verb>` with the verb bare
 * (decision 0072), SQLite's step 25 and PostgreSQL's step 16 alike. Written out, not derived from
 * src/wire/event-types.ts: a shipped step never changes.
 */
export const RENAME_EVENT_TYPES_SQL = `
      -- One name per kind of event for old rows and new (decision 0072): the past tenses and the
      -- nouns the audit log stored before become bare verbs.
      UPDATE events SET type = CASE type
        WHEN 'turn-error' THEN 'turn-fail'
        WHEN 'model-error' THEN 'model-fail'
        WHEN 'tool-failed' THEN 'tool-fail'
        WHEN 'tool-denied' THEN 'tool-deny'
        WHEN 'tool-invalid' THEN 'tool-reject'
        WHEN 'tool-blocked' THEN 'tool-block'
        WHEN 'tool-timeout' THEN 'tool-time-out'
        WHEN 'tool-tainted' THEN 'tool-taint'
        WHEN 'tool-sandbox-fault' THEN 'tool-sandbox-fail'
        WHEN 'channel-refused' THEN 'channel-refuse'
        WHEN 'channel-paired' THEN 'channel-pair'
        WHEN 'channel-reply-failed' THEN 'channel-reply-fail'
        WHEN 'cot-trace' THEN 'chain-of-thought-finish'
        WHEN 'workflow-state' THEN 'workflow-state-change'
        WHEN 'workflow-task' THEN 'workflow-task-finish'
        WHEN 'code-module-fault' THEN 'code-module-fail'
        WHEN 'a2a-push-delivered' THEN 'a2a-push-deliver'
        WHEN 'a2a-push-failed' THEN 'a2a-push-fail'
      END
      WHERE type IN ('turn-error', 'model-error', 'tool-failed', 'tool-denied', 'tool-invalid', 'tool-blocked', 'tool-timeout', 'tool-tainted',
        'tool-sandbox-fault', 'channel-refused', 'channel-paired', 'channel-reply-failed', 'cot-trace', 'workflow-state', 'workflow-task',
        'code-module-fault', 'a2a-push-delivered', 'a2a-push-failed');
`;

/**
 * The SQLite schema, oldest step first. Append new steps; never edit one that has shipped,
 * since databases in the field already hold its result.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'agents, sessions, memory, usage and events',
    sql: `
      CREATE TABLE agents (
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        state TEXT NOT NULL CHECK (state IN ('running', 'suspended')),
        parent_id TEXT REFERENCES agents (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        manifest TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      -- Without it, deleting an agent scans the whole table to find its children.
      CREATE INDEX agents_parent_id ON agents (parent_id);

      CREATE TABLE sessions (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        messages TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX sessions_agent_id ON sessions (agent_id);

      CREATE TABLE memory (
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (agent_id, key)
      ) STRICT, WITHOUT ROWID;

      -- agent_id is deliberately not a foreign key: usage outlives its agent, for accounting.
      CREATE TABLE usage (
        agent_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL
      ) STRICT;
      CREATE INDEX usage_agent_id_at ON usage (agent_id, at);
      CREATE INDEX usage_at ON usage (at);

      -- AUTOINCREMENT so that a sequence number is never reused, even after the newest rows go.
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        type TEXT NOT NULL,
        agent_id TEXT,
        data TEXT NOT NULL
      ) STRICT;
      CREATE INDEX events_agent_id ON events (agent_id);
      CREATE INDEX events_type ON events (type);
    `,
  },
  {
    version: 2,
    name: 'session revisions',
    // Counts a session's saves, so a kernel can tell whether the history it holds is still current.
    sql: `ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 3,
    name: 'approvals',
    // agent_id is not a foreign key: decisions are kept for the audit after the agent is gone.
    sql: `
      CREATE TABLE approvals (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        tool TEXT NOT NULL,
        input TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        requested_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER,
        decided_by TEXT,
        reason TEXT
      ) STRICT;
      CREATE INDEX approvals_status ON approvals (status, requested_at);
    `,
  },
  {
    version: 4,
    name: 'session messages as rows',
    // One row per message, so a turn appends its messages instead of rewriting the whole history.
    sql: `
      CREATE TABLE session_messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO session_messages (session_id, seq, message)
        SELECT sessions.id, CAST(item.key AS INTEGER), item.value
        FROM sessions, json_each(sessions.messages) AS item
        WHERE item.type = 'object';
      ALTER TABLE sessions DROP COLUMN messages;
    `,
  },
  {
    version: 5,
    name: 'A2A tasks',
    sql: `
      CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        state TEXT NOT NULL,
        finished INTEGER NOT NULL CHECK (finished IN (0, 1)),
        task TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX tasks_finished_created ON tasks (finished, created_at);
      CREATE INDEX tasks_context_updated ON tasks (context_id, updated_at);
      CREATE INDEX tasks_updated ON tasks (updated_at);
    `,
  },
  {
    version: 6,
    name: 'package runs',
    sql: `
      CREATE TABLE package_runs (
        id TEXT PRIMARY KEY,
        package TEXT NOT NULL,
        binding TEXT NOT NULL,
        trigger TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'interrupted')),
        inputs TEXT NOT NULL,
        activities TEXT NOT NULL,
        emitted TEXT,
        error TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
      ) STRICT;
      CREATE INDEX package_runs_package_started ON package_runs (package, binding, started_at);
      CREATE INDEX package_runs_started ON package_runs (started_at);
      CREATE INDEX package_runs_status ON package_runs (status);
    `,
  },
  {
    version: 7,
    name: 'installed packages; skipped and missed package runs',
    sql: `
      CREATE TABLE package_runs_7 (
        id TEXT PRIMARY KEY,
        package TEXT NOT NULL,
        binding TEXT NOT NULL,
        trigger TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed')),
        inputs TEXT NOT NULL,
        activities TEXT NOT NULL,
        emitted TEXT,
        error TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
      ) STRICT;
      INSERT INTO package_runs_7 SELECT id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at FROM package_runs ORDER BY rowid;
      DROP TABLE package_runs;
      ALTER TABLE package_runs_7 RENAME TO package_runs;
      CREATE INDEX package_runs_package_started ON package_runs (package, binding, started_at);
      CREATE INDEX package_runs_started ON package_runs (started_at);
      CREATE INDEX package_runs_status ON package_runs (status);
      CREATE TABLE installed_packages (
        slug TEXT PRIMARY KEY,
        qualified_name TEXT,
        version TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        source TEXT NOT NULL,
        persona TEXT NOT NULL,
        agent_json TEXT NOT NULL,
        loom_toml TEXT NOT NULL,
        settings TEXT NOT NULL,
        skills TEXT NOT NULL,
        installed_at INTEGER NOT NULL,
        last_fires TEXT NOT NULL DEFAULT '{}'
      ) STRICT;
    `,
  },
  {
    version: 8,
    name: 'workflow plans',
    sql: `
      CREATE TABLE workflows (
        agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        state TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX workflows_state ON workflows (state, updated_at);
    `,
  },
  {
    version: 9,
    name: 'forged tools',
    // No foreign key to agents: a shared tool outlives the agent that forged it.
    sql: `
      CREATE TABLE forged_tools (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        tier TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        successes INTEGER NOT NULL DEFAULT 0,
        total_ms REAL NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX forged_tools_agent ON forged_tools (agent_id, created_at);
    `,
  },
  {
    version: 10,
    name: 'channels',
    // Keyed by the channel's name in config.toml, not by an agent: a channel outlives the agents it serves.
    sql: `
      CREATE TABLE channel_messages (
        channel TEXT NOT NULL,
        platform_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT,
        conversation_id TEXT NOT NULL,
        conversation_kind TEXT NOT NULL,
        thread TEXT,
        mentioned INTEGER NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        note TEXT,
        received_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (channel, platform_id)
      ) STRICT;
      CREATE INDEX channel_messages_status ON channel_messages (channel, status, received_at);
      CREATE INDEX channel_messages_received ON channel_messages (channel, received_at);
      CREATE TABLE channel_pairings (
        code TEXT PRIMARY KEY,
        channel TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT,
        created_at INTEGER NOT NULL,
        approved_at INTEGER
      ) STRICT;
      CREATE INDEX channel_pairings_user ON channel_pairings (channel, user_id);
    `,
  },
  {
    version: 11,
    name: 'A2A push-notification configs',
    // No foreign key to tasks: a config sent with a message is stored before its task is. The
    // trigger deletes a task's configs with it (an evicted task notifies no one).
    sql: `
      CREATE TABLE a2a_push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        url TEXT NOT NULL,
        token TEXT,
        auth_scheme TEXT,
        auth_credentials TEXT,
        wire_version TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (task_id, id)
      ) STRICT;
      CREATE TRIGGER tasks_delete_push_configs AFTER DELETE ON tasks
      BEGIN
        DELETE FROM a2a_push_configs WHERE task_id = old.id;
      END;
    `,
  },
  {
    version: 12,
    name: 'approvals: the node whose turn waits',
    sql: `
      -- A daemon's node id (docs/cluster.md): another node sharing the store can tell whether the
      -- turn that asked still waits. Null for requests stored before.
      ALTER TABLE approvals ADD COLUMN node_id TEXT;
    `,
  },
  {
    version: 13,
    name: 'package runs: the node that runs each',
    sql: `
      -- A daemon's node id (docs/cluster.md): a run marked running is its node's while that node lives.
      ALTER TABLE package_runs ADD COLUMN node_id TEXT;
    `,
  },
  {
    version: 14,
    name: 'sessions: the conversation each holds',
    sql: `
      -- Who holds the session and through which door (decision 0043); null for the agent's main
      -- session, its owner's, which every session stored before is.
      ALTER TABLE sessions ADD COLUMN conversation TEXT;
    `,
  },
  {
    version: 15,
    name: 'usage: cached input tokens',
    sql: `
      -- Of a call's input tokens, those read from and written to the provider's prompt cache,
      -- which are priced apart (decision 0044); 0 for calls recorded before they were counted.
      ALTER TABLE usage ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE usage ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 16,
    name: 'turn journal',
    sql: `
      -- Turns under way, each step committed as it happens (decision 0045): a turn running when
      -- its daemon stopped resumes from here. A turn given an idempotency key stays 'done', with
      -- how it ended, for its caller's retries; others are deleted by their commit.
      CREATE TABLE turn_journal (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        conversation TEXT,
        request TEXT NOT NULL,
        idempotency_key TEXT,
        received_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        outcome TEXT,
        finished_at INTEGER
      ) STRICT;
      CREATE UNIQUE INDEX turn_journal_key ON turn_journal (agent_id, idempotency_key);
      CREATE INDEX turn_journal_state ON turn_journal (state, received_at);
      CREATE TABLE turn_steps (
        turn_id TEXT NOT NULL REFERENCES turn_journal (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (turn_id, seq)
      ) STRICT;
    `,
  },
  {
    version: 17,
    name: 'schedule runs',
    sql: `
      -- Every due wake-up of an agent's [schedule], run or skipped (decision 0046); gone with the agent.
      CREATE TABLE schedule_runs (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        trigger TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        outcome TEXT NOT NULL CHECK (outcome IN ('running', 'completed', 'unchanged', 'failed', 'skipped', 'interrupted')),
        reason TEXT,
        caught_up INTEGER NOT NULL CHECK (caught_up IN (0, 1)),
        count INTEGER NOT NULL,
        check_hash TEXT
      ) STRICT;
      CREATE INDEX schedule_runs_agent_due ON schedule_runs (agent_id, due_at);
      CREATE INDEX schedule_runs_outcome ON schedule_runs (outcome);
    `,
  },
  {
    version: 20,
    name: 'turn leases',
    sql: `
      -- The node that runs a journaled turn and until when it holds it (decision 0061). Only a
      -- store shared by several nodes (PostgreSQL) fills them; here, alone, they stay null. The
      -- columns are here so that a copy to PostgreSQL finds the same table.
      ALTER TABLE turn_journal ADD COLUMN node_id TEXT;
      ALTER TABLE turn_journal ADD COLUMN lease_until INTEGER;
    `,
  },
  {
    version: 22,
    name: 'package runs: heartbeat checks',
    sql: `
      -- A heartbeat binding's check (decision 0062): a run whose check found nothing new is
      -- 'unchanged' (no model called); completed and unchanged runs keep the check's hash.
      CREATE TABLE package_runs_22 (
        id TEXT PRIMARY KEY,
        package TEXT NOT NULL,
        binding TEXT NOT NULL,
        trigger TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed', 'unchanged')),
        inputs TEXT NOT NULL,
        activities TEXT NOT NULL,
        emitted TEXT,
        error TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        node_id TEXT,
        check_hash TEXT
      ) STRICT;
      INSERT INTO package_runs_22 (id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at, node_id)
        SELECT id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at, node_id FROM package_runs ORDER BY rowid;
      DROP TABLE package_runs;
      ALTER TABLE package_runs_22 RENAME TO package_runs;
      CREATE INDEX package_runs_package_started ON package_runs (package, binding, started_at);
      CREATE INDEX package_runs_started ON package_runs (started_at);
      CREATE INDEX package_runs_status ON package_runs (status);
    `,
  },
  {
    version: 23,
    name: 'turn journal: fewer trees',
    sql: `
      -- A tool turn writes its journal and drops it again at its commit, so each tree it touches
      -- costs a page twice per turn. The steps live in their key's tree alone (WITHOUT ROWID); an
      -- idempotency key is indexed only where there is one; the running turns are found at start
      -- by a scan of a table that holds only running and lately finished keyed turns.
      CREATE TABLE turn_journal_23 (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        conversation TEXT,
        request TEXT NOT NULL,
        idempotency_key TEXT,
        received_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        outcome TEXT,
        finished_at INTEGER,
        node_id TEXT,
        lease_until INTEGER
      ) STRICT;
      INSERT INTO turn_journal_23 (id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome, finished_at, node_id, lease_until)
        SELECT id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome, finished_at, node_id, lease_until FROM turn_journal ORDER BY rowid;
      CREATE TABLE turn_steps_23 (
        turn_id TEXT NOT NULL REFERENCES turn_journal_23 (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (turn_id, seq)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO turn_steps_23 (turn_id, seq, kind, at, data) SELECT turn_id, seq, kind, at, data FROM turn_steps;
      DROP TABLE turn_steps;
      DROP TABLE turn_journal;
      ALTER TABLE turn_journal_23 RENAME TO turn_journal;
      ALTER TABLE turn_steps_23 RENAME TO turn_steps;
      CREATE UNIQUE INDEX turn_journal_key ON turn_journal (agent_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
    `,
  },
  { version: 25, name: 'events: one tense', sql: RENAME_EVENT_TYPES_SQL },
  {
    version: 26,
    name: 'channel messages: claims',
    // Written on PostgreSQL only (the node answering a message, decision 0061); here it stays null,
    // so that a copy to PostgreSQL finds the same table.
    sql: `ALTER TABLE channel_messages ADD COLUMN claimed_by TEXT;`,
  },
  {
    version: 27,
    name: 'usage: lineage',
    sql: `
      -- The agents above the one that made a call, root first, each id followed by '/' (null for an
      -- agent no agent spawned): an ancestor's lifetime cap counts its descendants' spending, killed
      -- ones included, by the prefix (decision 0040).
      ALTER TABLE usage ADD COLUMN lineage TEXT;
      -- The rows of agents alive now get theirs, by one join (not a lookup per row); a killed
      -- agent's parent link is gone with it.
      WITH RECURSIVE lineages (id, lineage) AS (
        SELECT id, NULL FROM agents WHERE parent_id IS NULL
        UNION ALL
        SELECT agents.id, coalesce(lineages.lineage, '') || lineages.id || '/' FROM agents JOIN lineages ON agents.parent_id = lineages.id
      )
      UPDATE usage SET lineage = lineages.lineage FROM lineages WHERE lineages.id = usage.agent_id AND lineages.lineage IS NOT NULL;
      -- Built once the rows have their lineage (not kept up row by row); it holds spawned agents' rows only.
      CREATE INDEX usage_lineage ON usage (lineage) WHERE lineage IS NOT NULL;
    `,
  },
  {
    version: 28,
    name: 'turn journal: ended turns by when they ended',
    // The keyed turns kept done for a day, found by when they ended, so that forgetting them reads only
    // those past their day, a part at a time. A running turn is not in it: a turn's first writes add
    // nothing; a keyed turn's close adds its entry.
    sql: `CREATE INDEX turn_journal_done ON turn_journal (finished_at) WHERE state = 'done';`,
  },
];

/** The schema version of a database file, from `PRAGMA user_version`. */
export function readSchemaVersion(db: DatabaseSync): number {
  const row = db.prepare('PRAGMA user_version').get();
  const version = row?.['user_version'];
  return typeof version === 'number' ? version : 0;
}

/**
 * Brings the database at `path` up to the newest step of `steps`, each step in its own
 * `BEGIN IMMEDIATE` transaction together with its `user_version`, so a crash mid-step leaves
 * the previous version intact. Returns the resulting schema version.
 *
 * @throws {StoreError} when the file's schema is newer than `steps` knows, or a step fails
 *   (the database then stays at the version before that step).
 */
export function applyMigrations(db: DatabaseSync, path: string, steps: readonly Migration[] = migrations): number {
  assertOrdered(steps);
  const latest = steps.at(-1)?.version ?? 0;
  let current = readSchemaVersion(db);
  assertKnown(current, latest, path);
  for (const step of steps) {
    if (step.version <= current) continue;
    db.exec('BEGIN IMMEDIATE');
    try {
      // Another process sharing the file may have applied this step while we waited for the lock.
      current = readSchemaVersion(db);
      if (step.version > current) {
        db.exec(step.sql);
        db.exec(`PRAGMA user_version = ${step.version}`);
        current = step.version;
      }
      db.exec('COMMIT');
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      const reason = error instanceof Error ? error.message : String(error);
      throw new StoreError(
        `cannot migrate store "${path}" to schema version ${step.version} (${step.name}): ${reason}; ` + `the database stays at version ${current}`,
        { cause: error, details: { path, version: step.version } },
      );
    }
  }
  assertKnown(current, latest, path);
  return current;
}

function assertKnown(version: number, latest: number, path: string): void {
  if (version > latest) {
    throw new StoreError(
      `cannot open store "${path}": its schema version is ${version}, but this Loom knows versions up to ${latest}; ` +
        'upgrade Loom, or point it at another data directory',
      { details: { path, version, latest } },
    );
  }
}

/**
 * Checks that `steps` are in ascending order of version, each a positive integer.
 *
 * @throws {StoreError} naming the first step out of order.
 */
export function assertOrdered(steps: readonly Migration[]): void {
  let previous = 0;
  for (const step of steps) {
    if (!Number.isSafeInteger(step.version) || step.version <= previous) {
      throw new StoreError(`cannot migrate: migration "${step.name}" has version ${step.version}, expected an integer above ${previous}`);
    }
    previous = step.version;
  }
}
