import type pg from 'pg';
import { StoreError } from '../errors/index.ts';
import { assertOrdered, type Migration, RENAME_EVENT_TYPES_SQL } from './migrations.ts';
import { inTransaction } from './postgres-connection.ts';
import { SERVER_NOW_MS } from './server-clock.ts';

/**
 * The advisory lock (one 64-bit key, `Loom` in ASCII) held while the schema is migrated, so that
 * several Loom nodes starting at once on one database migrate it once, one after another.
 */
export const MIGRATION_LOCK_KEY = 0x4c6f6f6d;

/**
 * The PostgreSQL schema, oldest step first. Append new steps; never edit one that has shipped.
 * The tables mirror SQLite's (`migrations.ts`) column for column, so both stores read their rows
 * through the same schemas: text for JSON (kept byte for byte, key order and `\u0000` escapes
 * included, which JSONB would not keep), BIGINT for times in milliseconds and counts. Where
 * SQLite breaks ties by `rowid`, an identity column `insert_order` does; `COLLATE "C"` gives
 * SQLite's binary (code point) order to the text columns that results are sorted by.
 */
export const postgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'agents, sessions, memory, usage, events, approvals, A2A tasks and push configs, packages, workflows, forged tools, channels',
    sql: `
      CREATE TABLE agents (
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        state TEXT NOT NULL CHECK (state IN ('running', 'suspended')),
        parent_id TEXT REFERENCES agents (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        manifest TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX agents_parent_id ON agents (parent_id);

      CREATE TABLE sessions (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        revision BIGINT NOT NULL DEFAULT 0,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX sessions_agent_id ON sessions (agent_id, created_at, insert_order);

      CREATE TABLE session_messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
      );

      CREATE TABLE memory (
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        key TEXT COLLATE "C" NOT NULL,
        value TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (agent_id, key)
      );

      -- agent_id is deliberately not a foreign key: usage outlives its agent, for accounting.
      CREATE TABLE usage (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        agent_id TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL,
        model TEXT COLLATE "C" NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL
      );
      CREATE INDEX usage_agent_id_at ON usage (agent_id, at);
      CREATE INDEX usage_at ON usage (at);

      -- An identity never hands out a number twice, even after the newest rows go.
      CREATE TABLE events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at BIGINT NOT NULL,
        type TEXT NOT NULL,
        agent_id TEXT,
        data TEXT NOT NULL
      );
      CREATE INDEX events_agent_id ON events (agent_id, seq);
      CREATE INDEX events_type ON events (type, seq);

      -- agent_id is not a foreign key: decisions are kept for the audit after the agent is gone.
      CREATE TABLE approvals (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        tool TEXT NOT NULL,
        input TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        requested_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        decided_at BIGINT,
        decided_by TEXT,
        reason TEXT,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX approvals_status ON approvals (status, requested_at);

      CREATE TABLE tasks (
        id TEXT NOT NULL PRIMARY KEY,
        context_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        state TEXT NOT NULL,
        finished BOOLEAN NOT NULL,
        task TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX tasks_finished_created ON tasks (finished, created_at);
      CREATE INDEX tasks_context_updated ON tasks (context_id, updated_at);
      CREATE INDEX tasks_updated ON tasks (updated_at);

      -- No foreign key to tasks: a config sent with a message is stored before its task is.
      -- Deleting a task deletes its configs in the same statement (the task repository's delete).
      CREATE TABLE a2a_push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        url TEXT NOT NULL,
        token TEXT,
        auth_scheme TEXT,
        auth_credentials TEXT,
        wire_version TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (task_id, id)
      );

      CREATE TABLE package_runs (
        id TEXT NOT NULL PRIMARY KEY,
        package TEXT NOT NULL,
        binding TEXT NOT NULL,
        trigger TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed')),
        inputs TEXT NOT NULL,
        activities TEXT NOT NULL,
        emitted TEXT,
        error TEXT,
        started_at BIGINT NOT NULL,
        ended_at BIGINT,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX package_runs_package_started ON package_runs (package, binding, started_at);
      CREATE INDEX package_runs_started ON package_runs (started_at);
      CREATE INDEX package_runs_status ON package_runs (status);

      CREATE TABLE installed_packages (
        slug TEXT COLLATE "C" NOT NULL PRIMARY KEY,
        qualified_name TEXT,
        version TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        source TEXT NOT NULL,
        persona TEXT NOT NULL,
        agent_json TEXT NOT NULL,
        loom_toml TEXT NOT NULL,
        settings TEXT NOT NULL,
        skills TEXT NOT NULL,
        installed_at BIGINT NOT NULL,
        last_fires TEXT NOT NULL DEFAULT '{}'
      );

      CREATE TABLE workflows (
        agent_id TEXT NOT NULL PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        state TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX workflows_state ON workflows (state, updated_at);

      -- No foreign key to agents: a shared tool outlives the agent that forged it.
      CREATE TABLE forged_tools (
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        tier TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL,
        calls BIGINT NOT NULL DEFAULT 0,
        successes BIGINT NOT NULL DEFAULT 0,
        total_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX forged_tools_agent ON forged_tools (agent_id, created_at);

      -- Keyed by the channel's name in config.toml, not by an agent: a channel outlives the agents it serves.
      CREATE TABLE channel_messages (
        channel TEXT NOT NULL,
        platform_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT,
        conversation_id TEXT NOT NULL,
        conversation_kind TEXT NOT NULL,
        thread TEXT,
        mentioned BOOLEAN NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        note TEXT,
        received_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (channel, platform_id)
      );
      CREATE INDEX channel_messages_status ON channel_messages (channel, status, received_at);
      CREATE INDEX channel_messages_received ON channel_messages (channel, received_at);

      CREATE TABLE channel_pairings (
        code TEXT NOT NULL PRIMARY KEY,
        channel TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT,
        created_at BIGINT NOT NULL,
        approved_at BIGINT,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX channel_pairings_user ON channel_pairings (channel, user_id);
    `,
  },
  {
    version: 2,
    name: 'cluster: nodes and their heartbeats, claimed instants of timed work',
    sql: `
      -- One row per daemon process on this database (src/cluster/). Times are the database
      -- server's clock, so nodes with skewed clocks agree on who is alive.
      CREATE TABLE loom_nodes (
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        url TEXT,
        version TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        -- The server process of the node's lock connection: the leader's holds the advisory lock.
        lock_pid INTEGER,
        started_at BIGINT NOT NULL,
        last_seen BIGINT NOT NULL,
        stopped_at BIGINT
      );
      CREATE INDEX loom_nodes_last_seen ON loom_nodes (last_seen);

      -- Each instant of timed work (a package binding's cron or heartbeat, an agent's schedule)
      -- the leader fired: claimed before it fires, so no instant fires twice, even across a takeover.
      CREATE TABLE loom_timer_fires (
        timer TEXT NOT NULL,
        at BIGINT NOT NULL,
        node_id TEXT NOT NULL,
        claimed_at BIGINT NOT NULL,
        PRIMARY KEY (timer, at)
      );
      CREATE INDEX loom_timer_fires_claimed_at ON loom_timer_fires (claimed_at);
    `,
  },
  {
    version: 3,
    name: 'cluster: the shared work queue (jobs and their attempts)',
    sql: `
      -- Triggered work any node may run (src/cluster/job-queue.ts): taken with FOR UPDATE SKIP
      -- LOCKED, held by a lease its node renews; a lease that lapses (its node died) lets another
      -- node take the job again. Times are the database server's clock.
      CREATE TABLE loom_jobs (
        id TEXT NOT NULL PRIMARY KEY,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        -- Names the logical job (a timer's instant): enqueueing it twice makes one job.
        dedupe_key TEXT UNIQUE,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        -- Attempts handed back by a node stopping cleanly: they do not count against max_attempts.
        released INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until BIGINT,
        -- Not taken before (a failed attempt's retry waits).
        run_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        last_error TEXT
      );
      CREATE INDEX loom_jobs_pending ON loom_jobs (created_at, id) WHERE state IN ('queued', 'running');
      CREATE INDEX loom_jobs_finished ON loom_jobs (state, updated_at) WHERE state IN ('done', 'failed');

      -- One row per time a node took a job: who, when, and how it ended (null while it runs).
      CREATE TABLE loom_job_attempts (
        job_id TEXT NOT NULL REFERENCES loom_jobs (id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        node_id TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        finished_at BIGINT,
        outcome TEXT CHECK (outcome IN ('done', 'failed', 'lost', 'released')),
        error TEXT,
        PRIMARY KEY (job_id, attempt)
      );
    `,
  },
  {
    version: 4,
    name: 'approvals: the node whose turn waits',
    sql: `
      -- The node whose turn waits for the request: another node records a decision for it, and
      -- that node hears it (LISTEN/NOTIFY); a node gone leaves nobody waiting.
      ALTER TABLE approvals ADD COLUMN node_id TEXT;
    `,
  },
  {
    version: 5,
    name: 'package runs: the node that runs each',
    sql: `
      -- The node that runs it: a run marked running whose node is gone is recovered by the
      -- leader; one whose node lives is that node's (a fire of its binding elsewhere is skipped).
      ALTER TABLE package_runs ADD COLUMN node_id TEXT;
    `,
  },
  {
    version: 6,
    name: 'sessions: the conversation each holds',
    sql: `
      -- Who holds the session and through which door (decision 0043); null for the agent's main
      -- session, its owner's, which every session stored before is.
      ALTER TABLE sessions ADD COLUMN conversation TEXT;
    `,
  },
  {
    version: 7,
    name: 'usage: cached input tokens',
    sql: `
      -- Of a call's input tokens, those read from and written to the provider's prompt cache,
      -- which are priced apart (decision 0044); 0 for calls recorded before they were counted.
      ALTER TABLE usage ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE usage ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 8,
    name: 'turn journal',
    sql: `
      -- Turns under way, each step committed as it happens (decision 0045); see SQLite's step 16.
      CREATE TABLE turn_journal (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        conversation TEXT,
        request TEXT NOT NULL,
        idempotency_key TEXT,
        received_at BIGINT NOT NULL,
        state TEXT NOT NULL,
        outcome TEXT,
        finished_at BIGINT,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE UNIQUE INDEX turn_journal_key ON turn_journal (agent_id, idempotency_key);
      CREATE INDEX turn_journal_state ON turn_journal (state, received_at);
      CREATE TABLE turn_steps (
        turn_id TEXT NOT NULL REFERENCES turn_journal (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        at BIGINT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (turn_id, seq)
      );
    `,
  },
  {
    version: 9,
    name: 'schedule runs',
    sql: `
      -- Every due wake-up of an agent's [schedule], run or skipped (decision 0046); gone with the agent.
      CREATE TABLE schedule_runs (
        id TEXT NOT NULL PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        trigger TEXT NOT NULL,
        due_at BIGINT NOT NULL,
        started_at BIGINT,
        finished_at BIGINT,
        outcome TEXT NOT NULL CHECK (outcome IN ('running', 'completed', 'unchanged', 'failed', 'skipped', 'interrupted')),
        reason TEXT,
        caught_up BOOLEAN NOT NULL,
        count INTEGER NOT NULL,
        check_hash TEXT,
        insert_order BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX schedule_runs_agent_due ON schedule_runs (agent_id, due_at);
      CREATE INDEX schedule_runs_outcome ON schedule_runs (outcome);
    `,
  },
  {
    version: 12,
    name: 'turn and channel leases',
    sql: `
      -- A running turn of the journal is leased to the node that runs it (decision 0061): its id,
      -- and until when (the server's clock, in ms). The node renews it; once it lapses another
      -- node takes the turn over. Null: no node holds it (written before leases): any node takes it.
      ALTER TABLE turn_journal ADD COLUMN node_id TEXT;
      ALTER TABLE turn_journal ADD COLUMN lease_until BIGINT;
      CREATE INDEX turn_journal_lease ON turn_journal (state, lease_until);
      -- A channel that polls its platform is polled by one node at a time: the one holding its lease.
      CREATE TABLE loom_channel_leases (
        channel TEXT NOT NULL PRIMARY KEY,
        node_id TEXT NOT NULL,
        lease_until BIGINT NOT NULL
      );
    `,
  },
  {
    version: 14,
    name: 'package runs: heartbeat checks',
    sql: `
      -- A heartbeat binding's check (decision 0062): a run whose check found nothing new is
      -- 'unchanged' (no model called); completed and unchanged runs keep the check's hash.
      ALTER TABLE package_runs DROP CONSTRAINT IF EXISTS package_runs_status_check;
      ALTER TABLE package_runs ADD CONSTRAINT package_runs_status_check CHECK (status IN ('running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed', 'unchanged'));
      ALTER TABLE package_runs ADD COLUMN check_hash TEXT;
    `,
  },
  { version: 16, name: 'events: one tense', sql: RENAME_EVENT_TYPES_SQL },
  {
    version: 17,
    name: 'channel messages: claims',
    sql: `
      -- The node answering a channel message (decision 0061), taken before anything is shown to
      -- the person; the other nodes leave the message to it while it is alive. Null: no node yet.
      ALTER TABLE channel_messages ADD COLUMN claimed_by TEXT;
    `,
  },
  {
    version: 18,
    name: 'usage: lineage',
    sql: `
      -- The agents above the one that made a call, root first, each id followed by '/' (null for an
      -- agent no agent spawned): an ancestor's lifetime cap counts its descendants' spending, killed
      -- ones included, by the prefix (decision 0040), compared byte by byte as on SQLite. Adding a
      -- column with no default rewrites nothing; its lock on usage is held to the migration's end,
      -- as every step's is (one transaction): what a rolling upgrade sees is in decision 0040.
      ALTER TABLE usage ADD COLUMN lineage TEXT COLLATE "C";
      -- The rows of agents alive now get theirs, by one join; a killed agent's parent link is gone with it.
      WITH RECURSIVE lineages (id, lineage) AS (
        SELECT id, NULL::text COLLATE "C" FROM agents WHERE parent_id IS NULL
        UNION ALL
        SELECT agents.id, (coalesce(lineages.lineage, '') || lineages.id || '/') COLLATE "C" FROM agents JOIN lineages ON agents.parent_id = lineages.id
      )
      UPDATE usage SET lineage = lineages.lineage FROM lineages WHERE lineages.id = usage.agent_id AND lineages.lineage IS NOT NULL;
      -- Built once the rows have their lineage (not kept up row by row); it holds spawned agents' rows only.
      CREATE INDEX usage_lineage ON usage (lineage) WHERE lineage IS NOT NULL;
    `,
  },
  {
    version: 19,
    name: 'turn journal: running turns by agent',
    sql: `
      -- The running turn of an agent's session, which a node that does not run it shows and follows
      -- (decision 0059): found among the agent's running turns, in the order they came, not among
      -- every running turn of the cluster or the agent's keyed turns kept done for a day. A turn's
      -- open adds its entry; its close (deleted, or kept done) leaves it.
      CREATE INDEX turn_journal_running ON turn_journal (agent_id, received_at, insert_order) WHERE state = 'running';
    `,
  },
  {
    version: 20,
    name: "usage: running totals of capped agents' families",
    sql: `
      -- What an agent and the agents under it have spent in all (decision 0040), kept for the
      -- families that have a spending cap only: the sums of the usage rows whose agent_id is the
      -- agent or whose lineage names it, one row per agent, which a capped family's read before each
      -- model call finds by its key (the sum of those rows grew with every call the family made). A
      -- cap's first read seeds its family's row from the sum (see PostgresUsageRepository.familyTotals);
      -- from then on every insert into usage adds to the rows that exist for its agent and lineage
      -- (a turn's commit, usage written alone, the copy from SQLite, a node of an older version
      -- during a rolling upgrade), in its own statement's transaction. A family without a row (no
      -- cap) is not written at all. A row of NULL lineage counts for its own agent only, as in the
      -- sum. Nothing is filled here: the code alone knows which families are capped.
      CREATE TABLE loom_family_usage (
        agent_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cache_read_tokens BIGINT NOT NULL,
        cache_write_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        calls BIGINT NOT NULL
      );
      -- Once per statement, from the rows it inserted: the totals of their families that exist are
      -- locked in key order, so that statements of several nodes adding to the same totals wait for
      -- one another and never deadlock, then added to. No row is created: a seed (under a SHARE lock
      -- on usage, which no insert can hold with it) counts what was committed before it, the trigger
      -- what comes after.
      CREATE FUNCTION loom_count_family_usage() RETURNS trigger LANGUAGE plpgsql AS $body$
      BEGIN
        PERFORM 1 FROM loom_family_usage
          WHERE agent_id IN (SELECT family.agent_id FROM added AS item CROSS JOIN LATERAL ${familyOf('item')} AS family (agent_id))
          ORDER BY agent_id FOR UPDATE;
        IF FOUND THEN
          ${addedToFamilies()};
        END IF;
        RETURN NULL;
      END
      $body$;
      CREATE TRIGGER usage_family_totals AFTER INSERT ON usage REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION loom_count_family_usage();
      -- Usage emptied (TRUNCATE): the totals go with it, to be seeded again at a cap's next read.
      CREATE FUNCTION loom_clear_family_usage() RETURNS trigger LANGUAGE plpgsql AS $body$
      BEGIN
        DELETE FROM loom_family_usage;
        RETURN NULL;
      END
      $body$;
      CREATE TRIGGER usage_truncated AFTER TRUNCATE ON usage FOR EACH STATEMENT EXECUTE FUNCTION loom_clear_family_usage();
    `,
  },
];

/** Adds to `loom_family_usage` the sums of the rows `added` (step 20: a step that shipped never changes, so neither does this). */
function addedToFamilies(): string {
  const columns = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd'];
  return `UPDATE loom_family_usage AS total SET ${[...columns, 'calls'].map((column) => `${column} = total.${column} + sums.${column}`).join(', ')}
          FROM (
            SELECT family.agent_id, ${columns.map((column) => `sum(item.${column}) AS ${column}`).join(', ')}, count(*) AS calls
            FROM added AS item CROSS JOIN LATERAL ${familyOf('item')} AS family (agent_id)
            GROUP BY family.agent_id
          ) AS sums
          WHERE total.agent_id = sums.agent_id`;
}

/** The agents a usage row `item` counts for: its own and each its lineage names (step 20). */
function familyOf(item: string): string {
  return `(SELECT ${item}.agent_id UNION SELECT id COLLATE "C" FROM unnest(string_to_array(${item}.lineage, '/')) AS id WHERE id <> '')`;
}

/** The schema version a database holds: the newest row of `loom_schema`, 0 when it has none. */
export async function readPostgresSchemaVersion(db: Pick<pg.PoolClient, 'query'>): Promise<number> {
  const exists = await db.query<{ table: string | null }>("SELECT to_regclass('loom_schema')::text AS table");
  const table = exists.rows[0]?.table;
  if (table === undefined || table === null) return 0;
  const result = await db.query<{ version: number | null }>('SELECT max(version) AS version FROM loom_schema');
  return result.rows[0]?.version ?? 0;
}

/**
 * Brings the database up to the newest step of `steps`, in one transaction under the advisory
 * lock `MIGRATION_LOCK_KEY`: a second node that starts meanwhile waits, then finds the work done.
 * Each applied step is recorded in `loom_schema` (version, name, when). `target` is the redacted
 * URL, for messages. Returns the resulting schema version.
 *
 * @throws {StoreError} when the database's schema is newer than `steps` knows (nothing is
 *   changed), or a step fails (everything this call did is rolled back).
 */
export async function applyPostgresMigrations(pool: pg.Pool, target: string, steps: readonly Migration[] = postgresMigrations): Promise<number> {
  assertOrdered(steps);
  const latest = steps.at(-1)?.version ?? 0;
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const initial = await readPostgresSchemaVersion(client);
    if (initial > latest) {
      throw new StoreError(
        `cannot open store ${target}: its schema version is ${initial}, but this Loom knows versions up to ${latest}; ` +
          'upgrade Loom (every node sharing the database runs the same version), or point [store] url at another database',
        { details: { database: target, version: initial, latest } },
      );
    }
    if (initial === 0) {
      await client.query('CREATE TABLE IF NOT EXISTS loom_schema (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    }
    let current = initial;
    for (const step of steps) {
      if (step.version <= current) continue;
      try {
        await client.query(step.sql);
        await client.query(`INSERT INTO loom_schema (version, name, applied_at) VALUES ($1, $2, ${SERVER_NOW_MS})`, [step.version, step.name]);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new StoreError(
          `cannot migrate store ${target} to schema version ${step.version} (${step.name}): ${reason}; the database stays at version ${initial}`,
          { cause: error, details: { database: target, version: step.version } },
        );
      }
      current = step.version;
    }
    return current;
  });
}
