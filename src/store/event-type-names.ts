import { RENAMED_EVENT_TYPES } from '../wire/index.ts';

/**
 * Event types as they were called before decision 0072, which a node of an earlier Loom still
 * writes to a shared store during a rolling upgrade (the migration renamed the rows that were
 * there when it ran): read under their names of today, and found by a filter on those names.
 */
const RENAMED: Readonly<Record<string, string>> = RENAMED_EVENT_TYPES;

/** Each type of today with the names it had before, for the filters. */
const FORMER = new Map<string, string[]>();
for (const [former, current] of Object.entries(RENAMED)) FORMER.set(current, [...(FORMER.get(current) ?? []), former]);

/** An event type as it is called today. */
export function currentEventType(type: string): string {
  return RENAMED[type] ?? type;
}

/**
 * An event query's `type` and `types`, each type with the names it had before: a filter on a name
 * of today finds the rows an earlier Loom wrote under the old one.
 */
export function withFormerEventTypes(type: string | undefined, types: readonly string[] | undefined): { type?: string; types?: readonly string[] } {
  const expand = (list: readonly string[]): string[] => list.flatMap((name) => [name, ...(FORMER.get(name) ?? [])]);
  if (type !== undefined && FORMER.has(type)) {
    // Both given: the rows of that type, if the list has it; none if it does not.
    return { types: types === undefined || types.includes(type) ? expand([type]) : [] };
  }
  return { ...(type === undefined ? {} : { type }), ...(types === undefined ? {} : { types: expand(types) }) };
}
