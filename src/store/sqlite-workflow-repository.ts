import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { WorkflowRecord, WorkflowRepository, WorkflowState } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonText, parseRow, type SqliteRow } from './sqlite-rows.ts';

const STATES = ['planning', 'awaiting_approval', 'executing', 'paused', 'completed', 'failed', 'stalled', 'cancelled'] as const satisfies readonly WorkflowState[];

const taskRecord = z.object({
  id: z.string(),
  title: z.string(),
  instruction: z.string(),
  agent: z.string(),
  dependsOn: z.array(z.string()),
  acceptance: z.string(),
  status: z.enum(['pending', 'in_progress', 'completed', 'failed', 'blocked', 'skipped']),
  attempts: z.number(),
  result: z.string().nullable(),
  feedback: z.string().nullable(),
});

const workflowRow = z
  .object({
    agent_id: z.string(),
    state: z.enum(STATES),
    data: jsonText.pipe(z.object({ request: z.string(), summary: z.string(), tasks: z.array(taskRecord), replans: z.number(), note: z.string().nullable() })),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): WorkflowRecord => ({ agentId: row.agent_id, state: row.state, ...row.data, createdAt: row.created_at, updatedAt: row.updated_at }));

const columns = 'agent_id, state, data, created_at, updated_at';

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
    const data = { request: record.request, summary: record.summary, tasks: record.tasks, replans: record.replans, note: record.note };
    return this.#connection.execute(
      () => {
        this.#put.run(record.agentId, record.state, JSON.stringify(data), record.createdAt, record.updatedAt);
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
