import { existsSync } from 'node:fs';
import { DatabaseSync, type SQLOutputValue } from 'node:sqlite';
import pg from 'pg';
import { StoreConflictError, StoreError, StoreNotFoundError } from '../errors/index.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { copiedTables, assertTablesCovered, type CopiedTable } from './copy-tables.ts';
import { migrations, readSchemaVersion } from './migrations.ts';
import { inTransaction } from './postgres-connection.ts';
import { toPostgresOpenError, toPostgresStoreError } from './postgres-errors.ts';
import { applyPostgresMigrations } from './postgres-migrations.ts';
import { nodeAliveSql } from './server-clock.ts';
import { toOpenError } from './sqlite-errors.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from './sqlite-store.ts';
import { checksumPostgresTable, checksumSqliteTable, type PostgresColumn, quoteIdentifier } from './table-checksum.ts';

/** How long connecting to PostgreSQL may take before the copy fails, in milliseconds. */
export const DEFAULT_COPY_CONNECT_TIMEOUT_MS = 10_000;

/** How long the copy waits for the locks on the target's tables (held by a node running on it) before it fails. */
export const DEFAULT_COPY_LOCK_TIMEOUT_MS = 10_000;

/** An INSERT carries at most this many parameters, and about this many bytes of text. */
const BATCH_PARAMETERS = 10_000;
const BATCH_TEXT_BYTES = 8 * 1024 * 1024;

/** Options of `copySqliteToPostgres`. */
export interface CopyStoreOptions {
  /** The SQLite store to read (`LOOM_HOME/data/loom.db`). It is opened read-only and never changed. */
  sqlitePath: string;
  /** The PostgreSQL database to fill: its schema is migrated to the newest version; it must hold no Loom data. */
  url: string;
  /** How long connecting may take, in milliseconds (default 10 s). */
  connectTimeoutMs?: number;
  /** How long to wait for the target's table locks, in milliseconds (default 10 s). */
  lockTimeoutMs?: number;
  /** Stops the copy between batches; nothing is written then. */
  signal?: AbortSignal;
}

/** One table as copied: its rows and checksum on each side. */
export interface TableCopyReport {
  table: string;
  sqliteRows: number;
  postgresRows: number;
  sqliteChecksum: string;
  postgresChecksum: string;
  /** Whether both the counts and the checksums are equal. */
  ok: boolean;
}

/** What `copySqliteToPostgres` did. */
export interface StoreCopyReport {
  /** The SQLite file read. */
  source: string;
  /** The PostgreSQL database's URL without its password. */
  target: string;
  sqliteSchemaVersion: number;
  postgresSchemaVersion: number;
  /** Every table, in the order copied. */
  tables: TableCopyReport[];
  /** Whether every table matched. The copy is committed only then; otherwise nothing is written. */
  ok: boolean;
  /** The event sequence the target continues from: its next event is numbered above it. */
  eventSeq: number;
}

/** The shared part of refusal messages. */
function cannot(sqlitePath: string, target: string): string {
  return `cannot copy store "${sqlitePath}" into ${target}`;
}

/**
 * Copies every table of a SQLite store into an empty PostgreSQL database, row for row, keeping
 * ids, event sequence numbers (the target numbers its next event above every number SQLite
 * handed out), revisions, times, and the order in which SQLite breaks ties. Works on the tables
 * themselves, not through the repositories, so nothing is reshaped.
 *
 * Everything happens in one PostgreSQL transaction, with the target's Loom tables locked, over
 * one read snapshot of the SQLite file: the rows are copied, then each table is counted and
 * checksummed on both sides (see `table-checksum.ts`), and the transaction commits only when
 * every table matches. A failure, an abort or a mismatch leaves the target as it was (with its
 * schema migrated).
 *
 * @throws {StoreNotFoundError} when there is no file at `sqlitePath`.
 * @throws {StoreConflictError} when the target holds Loom data already (the message names the
 *   tables), or a Loom node runs on it.
 * @throws {StoreError} when the SQLite file cannot be read, its schema is not this Loom's newest,
 *   it has a table the copy does not cover, the target cannot be reached or migrated, or a row
 *   cannot be written (a NUL character in text, …); messages never show the password.
 * @throws the signal's reason when `signal` aborts the copy.
 * @example
 * const report = await copySqliteToPostgres({ sqlitePath: home.databasePath, url: 'postgres://loom:secret@db/loom' });
 * if (!report.ok) console.error(report.tables.filter((table) => !table.ok));
 */
export async function copySqliteToPostgres(options: CopyStoreOptions): Promise<StoreCopyReport> {
  const { sqlitePath, url, signal } = options;
  const target = redactDatabaseUrl(url);
  const source = openSqliteSource(sqlitePath, target);
  try {
    const sqliteSchemaVersion = readSchemaVersion(source);
    const pool = openPool(url, target, options.connectTimeoutMs ?? DEFAULT_COPY_CONNECT_TIMEOUT_MS);
    try {
      let postgresSchemaVersion: number;
      try {
        postgresSchemaVersion = await applyPostgresMigrations(pool, target);
      } catch (error) {
        throw toPostgresOpenError(error, target);
      }
      try {
        const report = await inTransaction(
          pool,
          (client) => copyInTransaction({ source, client, sqlitePath, target, lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_COPY_LOCK_TIMEOUT_MS, signal }),
          (copied) => copied.ok,
        );
        return { source: sqlitePath, target, sqliteSchemaVersion, postgresSchemaVersion, ...report };
      } catch (error) {
        if (signal?.aborted === true && error === signal.reason) throw error;
        throw toPostgresStoreError(error, { action: `copy store "${sqlitePath}" into ${target} (nothing was written)` }, target);
      }
    } finally {
      await pool.end().catch(() => undefined);
    }
  } finally {
    if (source.isTransaction) source.exec('ROLLBACK');
    source.close();
  }
}

/**
 * Opens the SQLite file read-only and checks it: this Loom's newest schema, every table covered.
 * (Read-only: a file whose schema is older is not migrated here; any command that opens the home
 * with this Loom migrates it.)
 */
function openSqliteSource(path: string, target: string): DatabaseSync {
  if (!existsSync(path)) {
    throw new StoreNotFoundError(`${cannot(path, target)}: there is no such file (is LOOM_HOME the home to move?)`, { details: { path } });
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout: DEFAULT_BUSY_TIMEOUT_MS });
    const version = readSchemaVersion(db);
    const latest = migrations.at(-1)?.version ?? 0;
    if (version < latest) {
      throw new StoreError(
        `${cannot(path, target)}: its schema version is ${version}, older than this Loom's ${latest}; ` +
          'run any command on the home once with this Loom (loom agent list) so that it is migrated, then copy again',
        { details: { path, version, latest } },
      );
    }
    if (version > latest) {
      throw new StoreError(`${cannot(path, target)}: its schema version is ${version}, but this Loom knows versions up to ${latest}; upgrade Loom`, {
        details: { path, version, latest },
      });
    }
    assertTablesCovered(db, path);
    return db;
  } catch (error) {
    if (db?.isOpen === true) db.close();
    throw toOpenError(error, path);
  }
}

function openPool(url: string, target: string, connectTimeoutMs: number): pg.Pool {
  try {
    // Default type parsing (BIGINT as a string), so that the checksums see every digit.
    const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: connectTimeoutMs, application_name: 'loom store migrate' });
    // Without a listener, a connection the server drops while idle would crash the process.
    pool.on('error', () => undefined);
    return pool;
  } catch (error) {
    throw toPostgresOpenError(error, target);
  }
}

interface TransactionInput {
  source: DatabaseSync;
  client: pg.PoolClient;
  sqlitePath: string;
  target: string;
  lockTimeoutMs: number;
  signal: AbortSignal | undefined;
}

async function copyInTransaction(input: TransactionInput): Promise<Pick<StoreCopyReport, 'tables' | 'ok' | 'eventSeq'>> {
  const { source, client, sqlitePath, target, signal } = input;
  const names = copiedTables.map((table) => quoteIdentifier(table.name)).join(', ');
  try {
    await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(input.lockTimeoutMs))}`);
    // Writers wait until the copy commits; readers (a node starting meanwhile) see nothing until then.
    await client.query(`LOCK TABLE ${names} IN EXCLUSIVE MODE`);
  } catch (error) {
    throw toPostgresStoreError(error, { action: `lock the tables of ${target} for the copy (does a Loom daemon run on it? stop it first)` }, target);
  }
  await assertNoLiveNode(client, sqlitePath, target);
  await assertEmpty(client, sqlitePath, target);
  // Usage is empty: totals of capped families left from rows deleted since would count the copied rows twice.
  // They are seeded again at each cap's first read.
  await client.query('DELETE FROM loom_family_usage');
  // One read snapshot of every table: a process writing to the file meanwhile changes nothing here.
  source.exec('BEGIN');
  const layouts: TableLayout[] = [];
  for (const table of copiedTables) {
    const layout = await tableLayout(source, client, table, sqlitePath);
    layouts.push(layout);
    await copyTable(source, client, layout, target, signal);
  }
  const tables: TableCopyReport[] = [];
  for (const layout of layouts) {
    signal?.throwIfAborted();
    const sqlite = checksumSqliteTable(source, layout.table, layout.sqliteColumns);
    const postgres = await checksumPostgresTable(client, layout.table, layout.postgresColumns);
    tables.push({
      table: layout.table.name,
      sqliteRows: sqlite.rows,
      postgresRows: postgres.rows,
      sqliteChecksum: sqlite.checksum,
      postgresChecksum: postgres.checksum,
      ok: sqlite.rows === postgres.rows && sqlite.checksum === postgres.checksum,
    });
  }
  const seq = await client.query<{ seq: string | null }>('SELECT max(seq)::text AS seq FROM events');
  return { tables, ok: tables.every((table) => table.ok), eventSeq: Math.max(Number(seq.rows[0]?.seq ?? 0), sqliteSequence(source, 'events')) };
}

async function assertNoLiveNode(client: pg.PoolClient, sqlitePath: string, target: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(`SELECT name FROM loom_nodes WHERE ${nodeAliveSql()} ORDER BY name COLLATE "C"`);
  if (rows.length > 0) {
    const nodes = rows.map((row) => `"${row.name}"`).join(', ');
    throw new StoreConflictError(
      `${cannot(sqlitePath, target)}: a Loom daemon runs on that database (node ${nodes}); stop it first, and copy into an empty database`,
      {
        details: { database: target, nodes: rows.map((row) => row.name) },
      },
    );
  }
}

async function assertEmpty(client: pg.PoolClient, sqlitePath: string, target: string): Promise<void> {
  const filled: string[] = [];
  for (const table of copiedTables) {
    const { rows } = await client.query<{ filled: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quoteIdentifier(table.name)}) AS filled`);
    if (rows[0]?.filled === true) filled.push(table.name);
  }
  if (filled.length > 0) {
    throw new StoreConflictError(
      `${cannot(sqlitePath, target)}: that database holds Loom data already (table ${filled.map((name) => `"${name}"`).join(', ')} has rows); ` +
        'nothing was written. Copy into a new, empty database (createdb), or empty this one first',
      { details: { database: target, tables: filled } },
    );
  }
}

/** A table's columns on both sides: SQLite's, each with its PostgreSQL counterpart. */
interface TableLayout {
  table: CopiedTable;
  sqliteColumns: string[];
  postgresColumns: PostgresColumn[];
  /** Copied columns that are identities on PostgreSQL (`events.seq`): written as they are, then the identity set past them. */
  identityColumns: string[];
}

async function tableLayout(source: DatabaseSync, client: pg.PoolClient, table: CopiedTable, sqlitePath: string): Promise<TableLayout> {
  const sqliteColumns = source
    .prepare(`PRAGMA table_info(${quoteIdentifier(table.name)})`)
    .all()
    .map((row) => String(row['name']));
  const { rows } = await client.query<{ column_name: string; data_type: string; is_identity: string }>(
    'SELECT column_name, data_type, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table.name],
  );
  const byName = new Map(rows.map((row) => [row.column_name, row]));
  const postgresColumns: PostgresColumn[] = [];
  const identityColumns: string[] = [];
  for (const name of sqliteColumns) {
    const column = byName.get(name);
    if (column === undefined)
      throw new StoreError(`cannot copy table "${table.name}" of "${sqlitePath}": PostgreSQL's "${table.name}" has no column "${name}"; nothing was written`);
    postgresColumns.push({ name, dataType: column.data_type });
    if (column.is_identity === 'YES') identityColumns.push(name);
  }
  // What only PostgreSQL has must fill itself: `insert_order`, `usage.id`.
  const extra = rows.filter((row) => !sqliteColumns.includes(row.column_name) && row.is_identity !== 'YES');
  if (extra.length > 0) {
    throw new StoreError(
      `cannot copy table "${table.name}" of "${sqlitePath}": SQLite's "${table.name}" has no column ${extra.map((row) => `"${row.column_name}"`).join(', ')}; nothing was written`,
    );
  }
  return { table, sqliteColumns, postgresColumns, identityColumns };
}

/** A SQLite value as a parameter of PostgreSQL's INSERT: integers as decimal text (every digit kept), 0/1 as booleans. */
function toParameter(value: SQLOutputValue | undefined, dataType: string): unknown {
  if (value === null || value === undefined) return null;
  if (dataType === 'boolean' && typeof value === 'bigint') return value !== 0n;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value);
  return value;
}

async function copyTable(source: DatabaseSync, client: pg.PoolClient, layout: TableLayout, target: string, signal: AbortSignal | undefined): Promise<void> {
  const { table, sqliteColumns, postgresColumns, identityColumns } = layout;
  const columnList = sqliteColumns.map(quoteIdentifier).join(', ');
  const overriding = identityColumns.length > 0 ? ' OVERRIDING SYSTEM VALUE' : '';
  const reference = table.selfReference;
  const seen = new Set<string>();
  const deferred: { key: string; referent: string }[] = [];
  const highest = new Map(identityColumns.map((column) => [column, 0n]));
  let batch: unknown[][] = [];
  let batchBytes = 0;

  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    signal?.throwIfAborted();
    const width = sqliteColumns.length;
    const values = batch.map((_, row) => `(${sqliteColumns.map((__, column) => `$${row * width + column + 1}`).join(', ')})`).join(', ');
    await client.query(`INSERT INTO ${quoteIdentifier(table.name)} (${columnList})${overriding} VALUES ${values}`, batch.flat());
    batch = [];
    batchBytes = 0;
  };

  try {
    const statement = source.prepare(`SELECT ${columnList} FROM ${quoteIdentifier(table.name)} ORDER BY ${table.sqliteOrder}`);
    statement.setReadBigInts(true);
    for (const row of statement.iterate()) {
      const parameters = postgresColumns.map((column) => toParameter(row[column.name], column.dataType));
      if (reference !== undefined) {
        const key = String(row[reference.references]);
        const referent = row[reference.column];
        // A row whose referent is not in yet gets it once every row is in.
        if (referent !== null && referent !== undefined && !seen.has(String(referent))) {
          parameters[sqliteColumns.indexOf(reference.column)] = null;
          deferred.push({ key, referent: String(referent) });
        }
        seen.add(key);
      }
      for (const column of identityColumns) {
        const value = row[column];
        if (typeof value === 'bigint' && value > (highest.get(column) ?? 0n)) highest.set(column, value);
      }
      batch.push(parameters);
      batchBytes += parameters.reduce<number>((sum, value) => sum + (typeof value === 'string' ? value.length : 8), 0);
      if ((batch.length + 1) * sqliteColumns.length > BATCH_PARAMETERS || batchBytes >= BATCH_TEXT_BYTES) await flush();
    }
    await flush();
    if (reference !== undefined) {
      for (const { key, referent } of deferred) {
        await client.query(
          `UPDATE ${quoteIdentifier(table.name)} SET ${quoteIdentifier(reference.column)} = $1 WHERE ${quoteIdentifier(reference.references)} = $2`,
          [referent, key],
        );
      }
    }
    for (const [column, value] of highest) {
      // Past the highest number SQLite ever handed out (AUTOINCREMENT remembers deleted ones), so none is reused.
      const next = BigInt(Math.max(0, sqliteSequence(source, table.name)));
      const floor = value > next ? value : next;
      if (floor > 0n) await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3)', [quoteIdentifier(table.name), column, floor.toString()]);
    }
  } catch (error) {
    if (signal?.aborted === true && error === signal.reason) throw error;
    throw toPostgresStoreError(error, { action: `copy table "${table.name}" (nothing was written)` }, target);
  }
}

/** The highest number SQLite's AUTOINCREMENT handed out for `table` (0 when none). */
function sqliteSequence(source: DatabaseSync, table: string): number {
  const exists = source.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'").get();
  if (exists === undefined) return 0;
  const row = source.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').get(table);
  return typeof row?.['seq'] === 'number' ? row['seq'] : 0;
}
