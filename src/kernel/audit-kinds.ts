import { AUDIT_KINDS, AUDIT_OUTCOMES, type AuditKind, type AuditOutcome } from '../wire/index.ts';

// The kinds and outcomes are part of the API (the dashboard's Events page filters on them): written once, in src/wire.
export { AUDIT_KINDS, AUDIT_OUTCOMES, type AuditKind, type AuditOutcome };

/**
 * The event types a query for `types` (all when undefined), of `kind`, with `outcome` names: the
 * types every given filter allows. Undefined when no filter is given (every type).
 */
export function auditTypes(filters: {
  types?: readonly string[] | undefined;
  kind?: AuditKind | undefined;
  outcome?: AuditOutcome | undefined;
}): readonly string[] | undefined {
  let types: readonly string[] | undefined = filters.types;
  for (const allowed of [
    filters.kind === undefined ? undefined : AUDIT_KINDS[filters.kind],
    filters.outcome === undefined ? undefined : AUDIT_OUTCOMES[filters.outcome],
  ]) {
    if (allowed === undefined) continue;
    const set: ReadonlySet<string> = new Set(allowed);
    types = types === undefined ? allowed : types.filter((type) => set.has(type));
  }
  return types;
}
