import { formatPath } from '../validation/index.ts';
import { objectKeysAt } from '../validation/index.ts';
import { ManifestSchema, MANIFEST_KEYS } from './schema.ts';

type Table = Record<string, unknown>;

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** Tables whose keys are the author's own, so nothing in them is taken for a misplaced key. */
const FREE_FORM_TABLES: ReadonlySet<string> = new Set(['metadata']);

interface Misplaced {
  key: string;
  path: readonly (string | number)[];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** 1-based line numbers of the TOML source, found by a plain scan (good enough for a hint). */
function lineOf(lines: readonly string[], pattern: RegExp, from = 0): number | undefined {
  for (let index = from; index < lines.length; index += 1) {
    if (pattern.test(lines[index] ?? '')) return index + 1;
  }
  return undefined;
}

/** Where a table's header stands, as written: `[resources]`, `[tools.web_fetch]`, `[[fallback_models]]`. */
function headerOf(path: readonly (string | number)[]): string {
  const keys = path.filter((segment): segment is string => typeof segment === 'string');
  const isArrayOfTables = typeof path[path.length - 1] === 'number';
  return isArrayOfTables ? `[[${keys.join('.')}]]` : `[${keys.join('.')}]`;
}

function findMisplaced(node: Table, path: readonly (string | number)[], found: Misplaced[]): void {
  const head = path[0];
  if (typeof head === 'string' && FREE_FORM_TABLES.has(head)) return;
  const known = path.length === 0 ? undefined : objectKeysAt(ManifestSchema, path);
  for (const [key, value] of Object.entries(node)) {
    if (path.length > 0 && MANIFEST_KEYS.has(key) && !(known?.includes(key) ?? false)) {
      // A top-level key inside a table is only taken for misplaced when it is valid where the
      // author meant it; otherwise the table's own validation reports it.
      const topLevel = ManifestSchema.shape[key as keyof typeof ManifestSchema.shape];
      if (topLevel.safeParse(value).success) {
        found.push({ key, path });
        continue;
      }
    }
    if (isTable(value)) findMisplaced(value, [...path, key], found);
    else if (Array.isArray(value)) {
      value.forEach((item, index) => {
        if (isTable(item)) findMisplaced(item, [...path, key, index], found);
      });
    }
  }
}

function tableAt(root: Table, path: readonly (string | number)[]): Table | undefined {
  let current: unknown = root;
  for (const segment of path) {
    if (Array.isArray(current) && typeof segment === 'number') current = current[segment];
    else if (isTable(current) && typeof segment === 'string') current = current[segment];
    else return undefined;
  }
  return isTable(current) ? current : undefined;
}

/**
 * Finds top-level manifest keys that TOML placed inside a table because they stand after a
 * table header (`priority = "normal"` after `[resources]` is `[resources].priority` to TOML),
 * moves each to the top level where its author meant it, and returns one warning per key that
 * says what happened and how to write it so TOML agrees. A key the top level already has is
 * left where it is, for validation to report. Mutates `document`.
 */
export function hoistMisplacedKeys(document: Table, source: string, text: string): string[] {
  const found: Misplaced[] = [];
  findMisplaced(document, [], found);
  if (found.length === 0) return [];
  const lines = text.split(/\r?\n/);
  const firstHeader = lineOf(lines, /^\s*\[/);
  const warnings: string[] = [];
  for (const { key, path } of found) {
    const table = tableAt(document, path);
    if (table === undefined || key in document) continue;
    document[key] = table[key];
    delete table[key];
    const header = headerOf(path);
    const headerLine = lineOf(lines, new RegExp(`^\\s*${escapeRegExp(header)}\\s*(#.*)?$`));
    const keyLine = lineOf(lines, new RegExp(`^\\s*"?${escapeRegExp(key)}"?\\s*=`), headerLine ?? 0);
    const where = keyLine === undefined ? '' : ` (line ${keyLine})`;
    warnings.push(
      `manifest "${source}"${where}: "${key}" stands after the ${header} header, so TOML reads it as ` +
        `${formatPath([...path, key], 'toml')}; Loom reads it as the top-level "${key}", as meant. ` +
        `To write it so TOML agrees, move it above the first table header` +
        `${firstHeader === undefined ? '' : ` (line ${firstHeader})`}.`,
    );
  }
  return warnings;
}
