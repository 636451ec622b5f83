import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from './import-graph.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Import cycles between files of src/kernel/ that are known and left for now, each as the files
 * it joins (type imports: each file names a type of the next). The list only shrinks.
 */
const KNOWN_CYCLES: readonly (readonly string[])[] = [
  // agent-runtime.ts names the skills and identity files it offers; they take an AgentRuntime.
  ['src/kernel/agent-runtime.ts', 'src/kernel/agent-skills.ts', 'src/kernel/identity-prompt.ts'],
  // budget-ledger.ts meters through the quota tracker; the tracker and the lifetime cap are its budgets.
  ['src/kernel/budget-ledger.ts', 'src/kernel/lifetime-spend.ts', 'src/kernel/quota-tracker.ts'],
];

/** The strongly connected groups of more than one file in `graph` (Tarjan's algorithm), each sorted. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!order.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, order.get(target) ?? 0));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(member);
      if (member === file) break;
    }
    if (group.length > 1) found.push(group.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return found;
}

describe('the files of src/kernel/', () => {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(REPOSITORY, 'src/kernel')) {
    const targets = importsOf(REPOSITORY, file).flatMap((found) => (found.to?.startsWith('src/kernel/') === true ? [found.to] : []));
    graph.set(file, targets);
  }
  const cycles = cyclesOf(graph).map((group) => group.join(' → '));
  const known = KNOWN_CYCLES.map((group) => [...group].sort().join(' → '));

  it('import one another in no cycle, type imports counted, but for the known ones (the message flow is in none)', () => {
    expect(cycles.filter((cycle) => !known.includes(cycle))).toEqual([]);
  });

  it('list no known cycle that is gone', () => {
    expect(known.filter((cycle) => !cycles.includes(cycle))).toEqual([]);
  });
});
