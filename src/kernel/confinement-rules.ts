import type { Manifest } from '../manifest/index.ts';

/**
 * The rules `confineChild` applies field by field: a limit at most the parent's (inherited when
 * left at its default), an allowlist narrowed to the parent's, switches on only when both allow.
 */

/** Where a confiner reports a field of the child that exceeds its parent, in the manifest's words. */
export type Report = (field: string, problem: string) => void;

/**
 * A limit of the child: at most the parent's. Left at its default (the author most likely did
 * not write it), the parent's tighter value is inherited; set higher, it is refused.
 */
export function limit(field: string, child: number, parent: number, fallback: number, report: Report, show: (value: number) => string = String): number {
  if (child <= parent) return child;
  if (child === fallback) return parent;
  report(field, `${show(child)} is more than the parent's ${show(parent)}`);
  return child;
}

/**
 * A limit where 0 means none (the hourly tokens and cost), so 0 is above every number: under a
 * parent with none, any; else as `limit`, and a child's 0 is refused unless it is the field's
 * default (then it was most likely not written, and the parent's limit is inherited).
 */
export function limitOrNone(field: string, child: number, parent: number, fallback: number, report: Report): number {
  if (parent === 0) return child;
  if (child !== 0) return limit(field, child, parent, fallback, report);
  if (fallback === 0) return parent;
  report(field, `0 (no limit) is more than the parent's ${parent}`);
  return child;
}

/**
 * An allowlist where empty means "all": under a parent's non-empty list, a child's empty list
 * becomes the parent's, and a non-empty one may name only what the parent's names.
 */
export function narrowAllowlist(
  field: string,
  child: readonly string[],
  parent: readonly string[],
  report: Report,
  covers = (held: string, name: string): boolean => held === name,
): string[] {
  if (parent.length === 0) return [...child];
  if (child.length === 0) return [...parent];
  const extra = child.filter((name) => !parent.some((held) => covers(held, name)));
  if (extra.length > 0)
    report(
      field,
      `${extra.map((name) => JSON.stringify(name)).join(', ')} ${extra.length === 1 ? 'is' : 'are'} not in the parent's ${field} (${parent.map((name) => JSON.stringify(name)).join(', ')})`,
    );
  return [...child];
}

/**
 * Whether the parent's `skills` entry `held` lets a child name `name`: the same entry, or a
 * pinned version of the skill the parent names unpinned (`@org/skills/n` covers
 * `@org/skills/n@1.0.0`). A plain name and a qualified one never cover each other: which org's
 * skill a plain name stands for depends on what is installed.
 */
export function skillCovers(held: string, name: string): boolean {
  return held === name || (held.startsWith('@') && !held.slice(1).includes('@') && name.startsWith(`${held}@`));
}

/** `[exec_policy]`: each switch is on only when both allow it. */
export function mergeExecPolicy(parent: Manifest['exec_policy'], child: Manifest['exec_policy']): Manifest['exec_policy'] {
  if (parent === undefined) return child;
  if (child === undefined) return { ...parent };
  return {
    allow_shell: parent.allow_shell && child.allow_shell,
    allow_network: parent.allow_network && child.allow_network,
    allow_file_write: parent.allow_file_write && child.allow_file_write,
  };
}

/** The names of both lists, each once, in order. */
export function union(first: readonly string[], second: readonly string[]): string[] {
  return [...new Set([...first, ...second])];
}
