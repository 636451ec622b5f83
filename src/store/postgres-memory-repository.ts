import type { MemoryRecord, MemoryRepository } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { memoryColumns as columns, memoryRow } from './table-rows.ts';

/** `MemoryRepository` on PostgreSQL. Keys are `COLLATE "C"`: sorted by code point, as SQLite's BINARY sorts them. */
export class PostgresMemoryRepository implements MemoryRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  put(record: MemoryRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(
          db,
          `INSERT INTO memory (${columns}) VALUES ($1, $2, $3, $4)
           ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
          [record.agentId, record.key, JSON.stringify(record.value), record.updatedAt],
        );
      },
      () => ({
        action: `put memory key "${record.key}" of agent "${record.agentId}"`,
        missing: `agent "${record.agentId}" does not exist`,
      }),
    );
  }

  get(agentId: string, key: string): Promise<MemoryRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM memory WHERE agent_id = $1 AND key = $2`, [agentId, key])).rows;
        return row === undefined ? undefined : parseMemory(row);
      },
      () => ({ action: `get memory key "${key}" of agent "${agentId}"` }),
    );
  }

  list(agentId: string, prefix?: string): Promise<MemoryRecord[]> {
    return this.#connection.execute(
      async (db) => {
        if (prefix === undefined || prefix === '') return (await query(db, `SELECT ${columns} FROM memory WHERE agent_id = $1 ORDER BY key`, [agentId])).rows.map(parseMemory);
        // Not LIKE: it treats % and _ as wildcards. The keys with the prefix are one run of the
        // primary key starting at the prefix (in C order); starts_with() keeps only that run.
        const { rows } = await query(db, `SELECT ${columns} FROM memory WHERE agent_id = $1 AND key >= $2 AND starts_with(key, $2) ORDER BY key`, [agentId, prefix]);
        return rows.map(parseMemory);
      },
      () => ({ action: `list the memory of agent "${agentId}"` }),
    );
  }

  delete(agentId: string, key: string): Promise<boolean> {
    return this.#connection.execute(
      async (db) => (await query(db, 'DELETE FROM memory WHERE agent_id = $1 AND key = $2', [agentId, key])).changed > 0,
      () => ({ action: `delete memory key "${key}" of agent "${agentId}"` }),
    );
  }
}

function parseMemory(row: Row): MemoryRecord {
  return parseRow(memoryRow, row, 'memory', ['agent_id', 'key']);
}
