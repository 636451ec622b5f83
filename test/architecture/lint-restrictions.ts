/**
 * The layering rules said again as ESLint's `no-restricted-imports`, so that an editor marks a
 * wrong import as it is typed. Lint sees static imports one file at a time: it says "not up the
 * floors", "through the index" and "no node: module here"; cycles, dynamic `import()` and stale
 * exceptions are left to test/architecture/layering.test.ts. Loaded by eslint.config.js as it is
 * (erasable syntax only).
 */
import type { Linter } from 'eslint';
import type { LayeringRules } from './layering-check.ts';

/** Where the rules are written, for the messages. */
const RULES_FILE = 'test/architecture/layering-rules.ts';

/** A pattern of `no-restricted-imports`. */
interface RegexPattern {
  regex: string;
  message: string;
}

/** One config block per folder of src/, restricting what its files import. */
export function layeringLintConfig(rules: LayeringRules): Linter.Config[] {
  const floorOf = new Map(rules.floors.flatMap((folders, floor) => folders.map((folder) => [folder, floor] as const)));
  const filesIn = (folder: string, keep: (floor: number) => boolean): string[] =>
    [
      ...Object.keys(rules.entries).filter((file) => file.startsWith(`src/${folder}/`) && keep(Infinity)),
      ...Object.entries(rules.leaves)
        .filter(([file, leaf]) => file.startsWith(`src/${folder}/`) && keep(leaf.floor))
        .map(([file]) => file),
    ].map((file) => file.slice(`src/${folder}/`.length));
  return [...floorOf].map(([folder, floor]) => {
    const patterns: RegexPattern[] = [];
    for (const [other, otherFloor] of floorOf) {
      if (other === folder) continue;
      if (otherFloor > floor && !(`${folder} -> ${other}` in rules.exceptions)) {
        patterns.push({
          regex: `^(\\.\\./)+${other}/${noneOf(filesIn(other, (leafFloor) => leafFloor <= floor))}`,
          message: `src/${folder}/ (floor ${floor}) may not import src/${other}/ (floor ${otherFloor}), which stands above it; the floors are in ${RULES_FILE}.`,
        });
      } else {
        patterns.push({
          regex: `^(\\.\\./)+${other}/${noneOf(['index.ts', ...filesIn(other, () => true)])}`,
          message: `import src/${other}/ through its index.ts; an entry that must load alone is listed, with the reason, in ${RULES_FILE}.`,
        });
      }
    }
    if (rules.nodeFree.folders.includes(folder)) {
      patterns.push({
        regex: `^node:${noneOf(Object.keys(rules.nodeFree.allowed).map((specifier) => specifier.slice('node:'.length)))}`,
        message: `src/${folder}/ stays free of Node's edges (STYLE.md): take the resource as a dependency; the allowed node: modules are in ${RULES_FILE}.`,
      });
    }
    return { files: [`src/${folder}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
  });
}

/** A lookahead that refuses exactly these names (none: an empty string). */
function noneOf(names: readonly string[]): string {
  return names.length === 0 ? '' : `(?!(${names.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})$)`;
}
