import { importsOf, type SourceImport, sourceFiles } from './import-graph.ts';

/**
 * The layering of `src/` written down as data: which floor each folder stands on, and the few
 * deliberate exceptions, each with the reason a reader needs.
 */
export interface LayeringRules {
  /** Floors from the bottom up; each lists the folders (under `src/`) that stand on it. */
  floors: readonly (readonly string[])[];
  /**
   * Files other folders import by path rather than through their folder's `index.ts`, and why
   * (an entry that must not load its folder's index, e.g. an SDK that loads on first use).
   */
  entries: Readonly<Record<string, string>>;
  /**
   * Files that import nothing of their folder and stand on a lower floor than it, so that lower
   * floors may use them (`src/x/leaf.ts` → the floor's index, from 0), and why. Each is its own
   * node of the graph, checked like a folder.
   */
  leaves: Readonly<Record<string, { floor: number; why: string }>>;
  /** Folder arrows (`'from -> to'`) allowed to point up or close a cycle, and why. */
  exceptions: Readonly<Record<string, string>>;
  /** Folders whose files may import `node:` modules only from `allowed` (specifier → why). */
  nodeFree: { folders: readonly string[]; allowed: Readonly<Record<string, string>> };
}

/** One place in the sources that breaks a rule, with the rule's name. */
export interface LayeringProblem {
  rule: 'unplaced folder' | 'cycle' | 'around the index' | 'up the floors' | 'node: import' | 'stale exception';
  message: string;
}

/** How many import sites a message lists for one arrow before saying how many more there are. */
const SITES_SHOWN = 3;

/**
 * Reads every source file under `src/` of `repository` and returns what breaks `rules`: a folder
 * on no floor, a cycle between folders (value or type imports), an import that reaches past a
 * folder's index, an arrow pointing down-up, a `node:` import where none belongs, and an exception
 * that no import needs any more. Each message names the files, lines and specifiers.
 */
export function checkLayering(repository: string, rules: LayeringRules): LayeringProblem[] {
  const imports = sourceFiles(repository, 'src').flatMap((file) => importsOf(repository, file));
  const floorOf = new Map<string, number>();
  rules.floors.forEach((folders, floor) => {
    for (const folder of folders) floorOf.set(folder, floor);
  });
  for (const [leaf, { floor }] of Object.entries(rules.leaves)) floorOf.set(leaf, floor);
  const unitOf = (file: string): string => (file in rules.leaves ? file : folderOf(file));

  const problems: LayeringProblem[] = [];
  const arrows = new Map<string, SourceImport[]>();
  for (const found of imports) {
    if (found.to === undefined || !found.to.startsWith('src/')) continue;
    const from = unitOf(found.from);
    const to = unitOf(found.to);
    if (from === to) continue;
    const key = `${from} -> ${to}`;
    arrows.set(key, [...(arrows.get(key) ?? []), found]);
    const folder = folderOf(found.to);
    if (to === folder && found.to !== `src/${folder}/index.ts` && !(found.to in rules.entries)) {
      problems.push({
        rule: 'around the index',
        message: `${site(found)}, past the index of src/${folder}/: import from '${relativeIndex(found)}', export what is needed there, or (for an entry that must load alone) add "${found.to}" to the entries with the reason`,
      });
    }
  }

  const units = new Set([...arrows.keys()].flatMap((key) => key.split(' -> ')));
  for (const unit of [...units].sort()) {
    if (!floorOf.has(unit))
      problems.push({
        rule: 'unplaced folder',
        message: `src/${unit}/ stands on no floor: add it to the floors of test/architecture/layering-rules.ts, above every folder it imports`,
      });
  }
  for (const [key, sites] of arrows) {
    const [from, to] = key.split(' -> ') as [string, string];
    const up = (floorOf.get(from) ?? Infinity) < (floorOf.get(to) ?? -Infinity);
    if (up && !(key in rules.exceptions)) {
      problems.push({
        rule: 'up the floors',
        message: `${describe(from)} (floor ${floorOf.get(from)}) imports ${describe(to)} (floor ${floorOf.get(to)}), which stands above it: ${sitesOf(sites)}`,
      });
    }
  }
  for (const key of Object.keys(rules.exceptions)) {
    if (!arrows.has(key))
      problems.push({
        rule: 'stale exception',
        message: `the exception "${key}" is needed no more: no import makes that arrow; remove it from the exceptions`,
      });
  }

  const graph = new Map<string, Set<string>>();
  for (const key of arrows.keys()) {
    if (key in rules.exceptions) continue;
    const [from, to] = key.split(' -> ') as [string, string];
    graph.set(from, (graph.get(from) ?? new Set()).add(to));
  }
  for (const cycle of cyclesOf(graph)) {
    const steps = cycle.map((from, at) => {
      const to = cycle[(at + 1) % cycle.length] as string;
      return `  ${describe(from)} -> ${describe(to)}: ${sitesOf(arrows.get(`${from} -> ${to}`) ?? [])}`;
    });
    problems.push({
      rule: 'cycle',
      message: `folders import each other in a cycle (${[...cycle, cycle[0] as string].map(describe).join(' -> ')}); break one arrow:\n${steps.join('\n')}`,
    });
  }

  for (const found of imports) {
    if (!found.specifier.startsWith('node:') || !rules.nodeFree.folders.includes(folderOf(found.from))) continue;
    if (!(found.specifier in rules.nodeFree.allowed)) {
      problems.push({
        rule: 'node: import',
        message: `${site(found)} into src/${folderOf(found.from)}/, which stays free of Node's edges (STYLE.md): take it as a dependency, or add it to the allowed node: modules with the reason`,
      });
    }
  }
  return problems;
}

/** The folder under `src/` a file belongs to: `src/mcp/server/x.ts` → `mcp`. */
export function folderOf(file: string): string {
  return file.split('/')[1] ?? file;
}

function describe(unit: string): string {
  return unit.includes('/') ? unit : `src/${unit}/`;
}

function site(found: SourceImport): string {
  return `${found.from}:${found.line} imports '${found.specifier}' (${found.kind})`;
}

function sitesOf(sites: readonly SourceImport[]): string {
  const shown = sites.slice(0, SITES_SHOWN).map(site).join('; ');
  return sites.length > SITES_SHOWN ? `${shown}; and ${sites.length - SITES_SHOWN} more` : shown;
}

function relativeIndex(found: SourceImport): string {
  const depth = found.from.split('/').length - 2;
  return `${'../'.repeat(depth)}${folderOf(found.to ?? '')}/index.ts`;
}

/**
 * One shortest cycle through each strongly connected group of `graph` (see
 * {@link stronglyConnectedGroups}, then a breadth-first search back to the group's first node), so
 * that a tangle of folders is reported once, as a path a reader can follow.
 */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  return stronglyConnectedGroups(graph).map((group) => shortestCycle(graph, new Set(group), group[0] as string));
}

/** The groups of more than one node of `graph` that all reach one another (Tarjan's algorithm), each sorted: the tangles of an import graph. */
export function stronglyConnectedGroups(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string): void => {
    order.set(node, order.size);
    low.set(node, order.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, order.get(next) as number));
      }
    }
    if (low.get(node) === order.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!order.has(node)) visit(node);
  return groups;
}

function shortestCycle(graph: ReadonlyMap<string, ReadonlySet<string>>, group: ReadonlySet<string>, start: string): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    const node = queue[at] as string;
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (!group.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0] as string) as string);
        return path;
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}
