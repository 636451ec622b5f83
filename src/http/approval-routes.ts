import { Hono } from 'hono';
import type { ApprovalRecord, JsonValue } from '../contracts/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { type HttpContext, type HttpEnv, kernelOf } from './http-context.ts';
import { readJsonBody, readQuery } from './request-input.ts';
import { ApprovalDecisionBodySchema, ApprovalsQuerySchema, type ApprovalView as WireApprovalView } from '../wire/index.ts';

/** An approval as the API, the CLI's `--json` and the dashboard show it: src/wire's `ApprovalView`, its input JSON. */
export interface ApprovalView extends Omit<WireApprovalView, 'input'> {
  input: JsonValue;
}

/** The API's view of an approval record (snake_case, times as ISO strings). */
export function toApprovalView(record: ApprovalRecord): ApprovalView {
  return {
    id: record.id,
    agent_id: record.agentId,
    agent: record.agentName,
    tool: record.tool,
    input: record.input,
    status: record.status,
    requested_at: new Date(record.requestedAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    decided_at: record.decidedAt === null ? null : new Date(record.decidedAt).toISOString(),
    decided_by: record.decidedBy,
    reason: record.reason,
  };
}

/** What the approval routes need. */
export interface ApprovalRoutesOptions {
  kernel: Kernel;
}

/**
 * `/api/approvals`: list (any role, a user key only its agents' requests; pending by default), and approve or deny (owner only; the
 * decision is recorded as made by the caller's key name, `local` without keys). A body is
 * optional: `{ "reason": "…" }` as JSON, and `"answer": {…}` to approve a question (a request
 * whose input carries `requestedSchema`).
 */
export function createApprovalRoutes(options: ApprovalRoutesOptions): Hono<HttpEnv> {
  const { kernel } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    const { status } = readQuery(c, ApprovalsQuerySchema);
    return c.json((await kernelOf(c, kernel).approvals(status ?? 'pending')).map(toApprovalView) satisfies WireApprovalView[]);
  });

  const decide = async (c: HttpContext, approved: boolean): Promise<Response> => {
    const caller = kernelOf(c, kernel);
    caller.require(approved ? 'approve tool calls' : 'deny tool calls');
    // No body, or an empty one, is no reason; anything else must be the JSON object.
    const length = c.req.header('content-length');
    const hasBody = length === undefined ? c.req.header('transfer-encoding') !== undefined : length !== '0';
    const { reason, answer } = hasBody ? await readJsonBody(c, ApprovalDecisionBodySchema) : {};
    const record = await caller.decide(c.req.param('id') ?? '', { approved, reason: reason === undefined || reason === '' ? null : reason, answer });
    return c.json(toApprovalView(record) satisfies WireApprovalView);
  };

  routes.post('/:id/approve', (c) => decide(c, true));
  routes.post('/:id/deny', (c) => decide(c, false));

  return routes;
}
