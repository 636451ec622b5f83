import type { DatabaseSync } from 'node:sqlite';
import { StoreError } from '../errors/index.ts';

/**
 * How one table is moved from SQLite to PostgreSQL. Both sides read the table in `order`, so
 * the copy inserts rows in SQLite's order (and PostgreSQL's `insert_order` identity, which breaks
 * ties where SQLite's `rowid` does, numbers them in that order), and the checksums of the two
 * sides see the rows in the same order.
 */
export interface CopiedTable {
  readonly name: string;
  /** `ORDER BY` on SQLite: `rowid` where the store breaks ties by it, else the primary key. */
  readonly sqliteOrder: string;
  /** The same order on PostgreSQL: `insert_order` (or `usage.id`) for `rowid`; text keys in `COLLATE "C"`, SQLite's binary order. */
  readonly postgresOrder: string;
  /**
   * A column that refers to another row of the same table (an agent's parent). A row whose
   * referent comes later in `order` is inserted with it null, and the column is set once every
   * row is in, so the rows keep their order whatever the order of parents and children.
   */
  readonly selfReference?: { readonly column: string; readonly references: string };
}

/**
 * Every table of SQLite's schema (`migrations.ts`), in an order that respects foreign keys
 * (an agent before its sessions, memory and workflow; a session before its messages).
 * `copySqliteToPostgres` refuses a SQLite file with a table not listed here, so a table added
 * by a later migration cannot be skipped without notice: add it here.
 */
export const copiedTables: readonly CopiedTable[] = [
  { name: 'agents', sqliteOrder: 'rowid', postgresOrder: 'insert_order', selfReference: { column: 'parent_id', references: 'id' } },
  { name: 'sessions', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'session_messages', sqliteOrder: 'session_id, seq', postgresOrder: 'session_id COLLATE "C", seq' },
  { name: 'memory', sqliteOrder: 'agent_id, key', postgresOrder: 'agent_id COLLATE "C", key COLLATE "C"' },
  { name: 'workflows', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'usage', sqliteOrder: 'rowid', postgresOrder: 'id' },
  { name: 'events', sqliteOrder: 'seq', postgresOrder: 'seq' },
  { name: 'approvals', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'tasks', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'a2a_push_configs', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'package_runs', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'schedule_runs', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'installed_packages', sqliteOrder: 'slug', postgresOrder: 'slug COLLATE "C"' },
  { name: 'forged_tools', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'channel_messages', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'channel_pairings', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'turn_journal', sqliteOrder: 'rowid', postgresOrder: 'insert_order' },
  { name: 'turn_steps', sqliteOrder: 'turn_id, seq', postgresOrder: 'turn_id COLLATE "C", seq' },
];

/**
 * Whether a PostgreSQL table is PostgreSQL's own (`loom_schema`, the cluster's `loom_nodes`,
 * `loom_timer_fires`, …: named `loom_*`), which SQLite has no counterpart of: neither copied nor
 * checked for rows, left as it is.
 */
export function isPostgresOnlyTable(name: string): boolean {
  return name.startsWith('loom_');
}

/** The tables of a SQLite database, without SQLite's own (`sqlite_sequence`, …), in name order. */
export function listSqliteTables(db: DatabaseSync): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").all();
  return rows.map((row) => String(row['name']));
}

/**
 * Checks that `copiedTables` covers every table of the SQLite database and that each of them exists.
 *
 * @throws {StoreError} naming a table the copy does not know (this Loom cannot move it) or a
 *   table it expects but the file lacks.
 */
export function assertTablesCovered(db: DatabaseSync, path: string): void {
  const present = listSqliteTables(db);
  const known = new Set(copiedTables.map((table) => table.name));
  const unknown = present.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new StoreError(
      `cannot copy store "${path}": it has table(s) ${unknown.map((name) => `"${name}"`).join(', ')} that the copy does not cover; ` +
        'nothing was copied (this is a defect of Loom: src/store/copy-tables.ts must list every table)',
      { details: { path, tables: unknown } },
    );
  }
  const missing = copiedTables.filter((table) => !present.includes(table.name)).map((table) => table.name);
  if (missing.length > 0) {
    throw new StoreError(`cannot copy store "${path}": it lacks table(s) ${missing.map((name) => `"${name}"`).join(', ')}; is it a Loom store?`, {
      details: { path, tables: missing },
    });
  }
}
