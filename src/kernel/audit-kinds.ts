/**
 * The kinds of audit records, by the event types each covers: what `/api/audit?kind=` and the
 * dashboard's Events page filter on. A refusal is both a refusal and a turn, tool or channel record.
 */
export const AUDIT_KINDS = {
  turn: ['turn-finish', 'turn-refuse', 'turn-cancel', 'turn-error', 'model-error'],
  tool: ['tool-finish', 'tool-failed', 'tool-denied', 'tool-invalid', 'tool-blocked', 'tool-timeout', 'tool-sandbox-fault'],
  refusal: ['turn-refuse', 'tool-denied', 'tool-invalid', 'tool-blocked', 'channel-refused'],
  approval: ['approval-request', 'approval-decide'],
  taint: ['tool-tainted'],
  'model-error': ['model-error'],
  agent: ['agent-spawn', 'agent-suspend', 'agent-resume', 'agent-update', 'agent-kill'],
  forge: ['tool-forge', 'tool-promote', 'tool-demote', 'tool-retire', 'tool-sandbox-fault'],
  package: ['package-fire', 'package-activity-start', 'package-activity-finish', 'package-notify', 'package-emit', 'package-run-finish', 'package-skip', 'package-miss', 'package-install'],
  channel: ['channel-refused', 'channel-paired', 'channel-reply-failed'],
  schedule: ['schedule-run-finish'],
  reasoning: ['cot-trace', 'workflow-state', 'workflow-task', 'code-module-fault'],
} as const satisfies Record<string, readonly string[]>;

/** A kind of audit record. */
export type AuditKind = keyof typeof AUDIT_KINDS;

/**
 * How a turn or a call ended, by the event types that record it: what `/api/audit?outcome=`
 * filters on. Records that end nothing (a spawn, an approval request) have no outcome; an
 * approval's decision is in its `status`.
 */
export const AUDIT_OUTCOMES = {
  ok: ['turn-finish', 'tool-finish'],
  refused: AUDIT_KINDS.refusal,
  failed: ['turn-error', 'model-error', 'tool-failed', 'tool-timeout', 'tool-sandbox-fault', 'code-module-fault', 'package-notify', 'channel-reply-failed'],
  cancelled: ['turn-cancel'],
} as const satisfies Record<string, readonly string[]>;

/** An outcome of a turn or a call. */
export type AuditOutcome = keyof typeof AUDIT_OUTCOMES;

/**
 * The event types a query for `types` (all when undefined), of `kind`, with `outcome` names: the
 * types every given filter allows. Undefined when no filter is given (every type).
 */
export function auditTypes(filters: { types?: readonly string[] | undefined; kind?: AuditKind | undefined; outcome?: AuditOutcome | undefined }): readonly string[] | undefined {
  let types: readonly string[] | undefined = filters.types;
  for (const allowed of [filters.kind === undefined ? undefined : AUDIT_KINDS[filters.kind], filters.outcome === undefined ? undefined : AUDIT_OUTCOMES[filters.outcome]]) {
    if (allowed === undefined) continue;
    const set: ReadonlySet<string> = new Set(allowed);
    types = types === undefined ? allowed : types.filter((type) => set.has(type));
  }
  return types;
}
