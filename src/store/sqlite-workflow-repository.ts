import type { StatementSync } from 'node:sqlite';
import type { WorkflowRecord, WorkflowRepository, WorkflowState } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { workflowColumns as columns, workflowData, workflowRow } from './table-rows.ts';

/** `WorkflowRepository` on SQLite (migration 8): one row per workflow agent, the plan as JSON; removed with its agent. */
export class SqliteWorkflowRepository implements WorkflowRepository {
  readonly #connection: SqliteConnection;
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #byState: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#put = db.prepare(`INSERT INTO workflows (${columns}) VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET state = excluded.state, data = excluded.data, created_at = excluded.created_at, updated_at = excluded.updated_at`);
    this.#get = db.prepare(`SELECT ${columns} FROM workflows WHERE agent_id = ?`);
    this.#byState = db.prepare(`SELECT ${columns} FROM workflows WHERE state = ? ORDER BY updated_at, rowid`);
  }

  get(agentId: string): Promise<WorkflowRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(agentId);
        return row === undefined ? undefined : parseWorkflow(row);
      },
      () => ({ action: `read the workflow of agent "${agentId}"` }),
    );
  }

  put(record: WorkflowRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#put.run(record.agentId, record.state, workflowData(record), record.createdAt, record.updatedAt);
      },
      () => ({ action: `store the workflow of agent "${record.agentId}"` }),
    );
  }

  listByState(state: WorkflowState): Promise<WorkflowRecord[]> {
    return this.#connection.execute(
      () => this.#byState.all(state).map(parseWorkflow),
      () => ({ action: `list ${state} workflows` }),
    );
  }
}

function parseWorkflow(row: SqliteRow): WorkflowRecord {
  return parseRow(workflowRow, row, 'workflows', ['agent_id']);
}
