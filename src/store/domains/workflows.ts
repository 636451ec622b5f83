import { z } from 'zod';
import type { WorkflowRecord, WorkflowRepository, WorkflowState } from '../../contracts/index.ts';
import { jsonText, parseRow, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, sql } from '../sql/statement.ts';

const WORKFLOW_STATES = [
  'planning',
  'awaiting_approval',
  'executing',
  'paused',
  'completed',
  'failed',
  'stalled',
  'cancelled',
] as const satisfies readonly WorkflowState[];

const workflowTaskRecord = z.object({
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

const columns = 'agent_id, state, data, created_at, updated_at';
const select = raw(`SELECT ${columns} FROM workflows`);

/** A row of `workflows`: one workflow agent's plan, as JSON. */
const workflowRow = z
  .object({
    agent_id: z.string(),
    state: z.enum(WORKFLOW_STATES),
    data: jsonText.pipe(
      z.object({ request: z.string(), summary: z.string(), tasks: z.array(workflowTaskRecord), replans: z.number(), note: z.string().nullable() }),
    ),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): WorkflowRecord => ({ agentId: row.agent_id, state: row.state, ...row.data, createdAt: row.created_at, updatedAt: row.updated_at }));

/** `WorkflowRepository` on either database: one row per workflow agent, the plan as JSON text; removed with its agent. */
export class SqlWorkflowRepository implements WorkflowRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async get(agentId: string): Promise<WorkflowRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE agent_id = ${agentId}`, () => ({ action: `read the workflow of agent "${agentId}"` }));
    return row === undefined ? undefined : parseWorkflow(row);
  }

  async put(record: WorkflowRecord): Promise<void> {
    const data = JSON.stringify({ request: record.request, summary: record.summary, tasks: record.tasks, replans: record.replans, note: record.note });
    await this.#db.run(insert('workflows', columns, [record.agentId, record.state, data, record.createdAt, record.updatedAt], { key: 'agent_id' }), () => ({
      action: `store the workflow of agent "${record.agentId}"`,
    }));
  }

  async listByState(state: WorkflowState): Promise<WorkflowRecord[]> {
    const rows = await this.#db.all(sql`${select} WHERE state = ${state} ORDER BY updated_at, ${this.#db.insertOrder}`, () => ({
      action: `list ${state} workflows`,
    }));
    return rows.map(parseWorkflow);
  }
}

function parseWorkflow(row: Row): WorkflowRecord {
  return parseRow(workflowRow, row, 'workflows', ['agent_id']);
}
