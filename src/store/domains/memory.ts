import { z } from 'zod';
import type { MemoryRecord, MemoryRepository } from '../../contracts/index.ts';
import { parseRow, jsonText, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, sql } from '../sql/statement.ts';

const columns = 'agent_id, key, value, updated_at';
const select = raw(`SELECT ${columns} FROM memory`);

/** A row of `memory`. */
const memoryRow = z
  .object({
    agent_id: z.string(),
    key: z.string(),
    value: jsonText,
    updated_at: z.number(),
  })
  .transform((row): MemoryRecord => ({ agentId: row.agent_id, key: row.key, value: row.value, updatedAt: row.updated_at }));

/**
 * `MemoryRepository` on either database. Keys sort by code point: SQLite's BINARY collation,
 * PostgreSQL's `COLLATE "C"`.
 */
export class SqlMemoryRepository implements MemoryRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async put(record: MemoryRecord): Promise<void> {
    await this.#db.run(
      insert('memory', columns, [record.agentId, record.key, JSON.stringify(record.value), record.updatedAt], {
        key: 'agent_id, key',
        update: ['value', 'updated_at'],
      }),
      () => ({
        action: `put memory key "${record.key}" of agent "${record.agentId}"`,
        missing: `agent "${record.agentId}" does not exist`,
      }),
    );
  }

  async get(agentId: string, key: string): Promise<MemoryRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE agent_id = ${agentId} AND key = ${key}`, () => ({
      action: `get memory key "${key}" of agent "${agentId}"`,
    }));
    return row === undefined ? undefined : parseMemory(row);
  }

  async list(agentId: string, prefix?: string): Promise<MemoryRecord[]> {
    // The keys with the prefix are one run of the primary key starting at the prefix: seek there.
    const statement =
      prefix === undefined || prefix === ''
        ? sql`${select} WHERE agent_id = ${agentId} ORDER BY key`
        : sql`${select} WHERE agent_id = ${agentId} AND key >= ${prefix} AND ${this.#db.startsWith('key', prefix)} ORDER BY key`;
    return (await this.#db.all(statement, () => ({ action: `list the memory of agent "${agentId}"` }))).map(parseMemory);
  }

  async delete(agentId: string, key: string): Promise<boolean> {
    return (
      (await this.#db.run(sql`DELETE FROM memory WHERE agent_id = ${agentId} AND key = ${key}`, () => ({
        action: `delete memory key "${key}" of agent "${agentId}"`,
      }))) > 0
    );
  }
}

function parseMemory(row: Row): MemoryRecord {
  return parseRow(memoryRow, row, 'memory', ['agent_id', 'key']);
}
