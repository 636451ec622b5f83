import { createHash, type Hash } from 'node:crypto';
import type { DatabaseSync, SQLOutputValue } from 'node:sqlite';
import type pg from 'pg';
import type { CopiedTable } from './copy-tables.ts';

/** A table's row count and the SHA-256 (hex) of its canonical rendering. */
export interface TableChecksum {
  rows: number;
  checksum: string;
}

/** A PostgreSQL column: its name and `information_schema.columns.data_type`. */
export interface PostgresColumn {
  readonly name: string;
  readonly dataType: string;
}

/** How many rows a PostgreSQL checksum fetches at a time. */
const FETCH_ROWS = 1_000;

/** A column name as an SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

// The canonical rendering of a value, the same for what SQLite and PostgreSQL return for it:
// integers (SQLite's read as bigint; PostgreSQL's BIGINT, INTEGER and BOOLEAN) as decimal digits,
// reals as JavaScript's shortest round-trip text, text as a JSON string, null as `null`.

function realText(value: number): string {
  return String(value);
}

function bytesText(value: Uint8Array): string {
  return `x'${Buffer.from(value).toString('hex')}'`;
}

/** A SQLite value (read with `setReadBigInts(true)`) in the canonical rendering. */
export function sqliteValueText(value: SQLOutputValue): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return realText(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return bytesText(value);
}

/** A scalar `pg` returned as text: strings as they are, numbers in decimal, anything else (never expected) as JSON. */
function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

/** A PostgreSQL value (as `pg` parses it by default) of a column of `dataType`, in the canonical rendering. */
export function postgresValueText(value: unknown, dataType: string): string {
  if (value === null || value === undefined) return 'null';
  switch (dataType) {
    case 'boolean':
      return value === true ? '1' : '0';
    case 'bigint':
    case 'integer':
    case 'smallint':
      return scalarText(value);
    case 'double precision':
    case 'real':
      return realText(Number(value));
    case 'bytea':
      return value instanceof Uint8Array ? bytesText(value) : JSON.stringify(scalarText(value));
    default:
      return JSON.stringify(scalarText(value));
  }
}

function startHash(table: string, columns: readonly string[]): Hash {
  return createHash('sha256').update(`${table}\n${columns.join(',')}\n`);
}

/**
 * Counts and checksums `table` of a SQLite database over `columns`, its rows in the table's
 * order, each rendered as a JSON array of its canonical values on a line of its own.
 */
export function checksumSqliteTable(db: DatabaseSync, table: CopiedTable, columns: readonly string[]): TableChecksum {
  const hash = startHash(table.name, columns);
  const statement = db.prepare(`SELECT ${columns.map(quoteIdentifier).join(', ')} FROM ${quoteIdentifier(table.name)} ORDER BY ${table.sqliteOrder}`);
  statement.setReadBigInts(true);
  let rows = 0;
  for (const row of statement.iterate()) {
    hash.update(`[${columns.map((column) => sqliteValueText(row[column] ?? null)).join(',')}]\n`);
    rows += 1;
  }
  return { rows, checksum: hash.digest('hex') };
}

/**
 * Counts and checksums `table` of a PostgreSQL database over `columns`, as `checksumSqliteTable`
 * does, through a cursor (so `client` must be in a transaction), `FETCH_ROWS` rows at a time.
 * `client` must parse values as `pg` does by default (BIGINT as a string).
 */
export async function checksumPostgresTable(
  client: Pick<pg.PoolClient, 'query'>,
  table: CopiedTable,
  columns: readonly PostgresColumn[],
): Promise<TableChecksum> {
  const hash = startHash(
    table.name,
    columns.map((column) => column.name),
  );
  const select = `SELECT ${columns.map((column) => quoteIdentifier(column.name)).join(', ')} FROM ${quoteIdentifier(table.name)} ORDER BY ${table.postgresOrder}`;
  await client.query(`DECLARE loom_checksum NO SCROLL CURSOR FOR ${select}`);
  let rows = 0;
  for (;;) {
    const batch = await client.query<Record<string, unknown>>(`FETCH ${FETCH_ROWS} FROM loom_checksum`);
    for (const row of batch.rows) {
      hash.update(`[${columns.map((column) => postgresValueText(row[column.name], column.dataType)).join(',')}]\n`);
    }
    rows += batch.rows.length;
    if (batch.rows.length < FETCH_ROWS) break;
  }
  // Not in a `finally`: after a failure the transaction is aborted (its rollback closes the cursor).
  await client.query('CLOSE loom_checksum');
  return { rows, checksum: hash.digest('hex') };
}
