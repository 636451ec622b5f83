import type { WorkflowRecord, WorkflowRepository, WorkflowState } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { workflowColumns as columns, workflowData, workflowRow } from './table-rows.ts';

/** `WorkflowRepository` on PostgreSQL: one row per workflow agent, the plan as JSON text; removed with its agent. */
export class PostgresWorkflowRepository implements WorkflowRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  get(agentId: string): Promise<WorkflowRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM workflows WHERE agent_id = $1`, [agentId])).rows;
        return row === undefined ? undefined : parseWorkflow(row);
      },
      () => ({ action: `read the workflow of agent "${agentId}"` }),
    );
  }

  put(record: WorkflowRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(
          db,
          `INSERT INTO workflows (${columns}) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (agent_id) DO UPDATE SET state = excluded.state, data = excluded.data, created_at = excluded.created_at, updated_at = excluded.updated_at`,
          [record.agentId, record.state, workflowData(record), record.createdAt, record.updatedAt],
        );
      },
      () => ({ action: `store the workflow of agent "${record.agentId}"` }),
    );
  }

  listByState(state: WorkflowState): Promise<WorkflowRecord[]> {
    return this.#connection.execute(
      async (db) => (await query(db, `SELECT ${columns} FROM workflows WHERE state = $1 ORDER BY updated_at, insert_order`, [state])).rows.map(parseWorkflow),
      () => ({ action: `list ${state} workflows` }),
    );
  }
}

function parseWorkflow(row: Row): WorkflowRecord {
  return parseRow(workflowRow, row, 'workflows', ['agent_id']);
}
