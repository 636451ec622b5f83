import type { StatementSync } from 'node:sqlite';
import type { MemoryRecord, MemoryRepository } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { memoryColumns as columns, memoryRow } from './table-rows.ts';


/** `MemoryRepository` on SQLite. Statements are prepared once, when the store opens. */
export class SqliteMemoryRepository implements MemoryRepository {
  readonly #connection: SqliteConnection;
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #listFrom: StatementSync;
  readonly #delete: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#put = db.prepare(
      `INSERT INTO memory (${columns}) VALUES (?, ?, ?, ?)
       ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    );
    this.#get = db.prepare(`SELECT ${columns} FROM memory WHERE agent_id = ? AND key = ?`);
    this.#list = db.prepare(`SELECT ${columns} FROM memory WHERE agent_id = ? ORDER BY key`);
    this.#listFrom = db.prepare(`SELECT ${columns} FROM memory WHERE agent_id = ? AND key >= ? ORDER BY key`);
    this.#delete = db.prepare('DELETE FROM memory WHERE agent_id = ? AND key = ?');
  }

  put(record: MemoryRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#put.run(record.agentId, record.key, JSON.stringify(record.value), record.updatedAt);
      },
      () => ({
        action: `put memory key "${record.key}" of agent "${record.agentId}"`,
        missing: `agent "${record.agentId}" does not exist`,
      }),
    );
  }

  get(agentId: string, key: string): Promise<MemoryRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(agentId, key);
        return row === undefined ? undefined : parseMemory(row);
      },
      () => ({ action: `get memory key "${key}" of agent "${agentId}"` }),
    );
  }

  list(agentId: string, prefix?: string): Promise<MemoryRecord[]> {
    return this.#connection.execute(
      () => {
        if (prefix === undefined || prefix === '') return this.#list.all(agentId).map((row) => parseMemory(row));
        // Not LIKE: it is case-insensitive and treats % and _ as wildcards. Keys are in BINARY
        // (code point) order, so the keys with this prefix are one run starting at the prefix:
        // seek there by the primary key and stop at the first key outside it.
        const records: MemoryRecord[] = [];
        for (const row of this.#listFrom.iterate(agentId, prefix)) {
          const key = row['key'];
          if (typeof key === 'string' && !key.startsWith(prefix)) break;
          records.push(parseMemory(row));
        }
        return records;
      },
      () => ({ action: `list the memory of agent "${agentId}"` }),
    );
  }

  delete(agentId: string, key: string): Promise<boolean> {
    return this.#connection.execute(
      () => Number(this.#delete.run(agentId, key).changes) > 0,
      () => ({ action: `delete memory key "${key}" of agent "${agentId}"` }),
    );
  }
}

function parseMemory(row: SqliteRow): MemoryRecord {
  return parseRow(memoryRow, row, 'memory', ['agent_id', 'key']);
}
