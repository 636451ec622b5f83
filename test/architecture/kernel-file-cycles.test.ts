import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from './import-graph.ts';
import { stronglyConnectedGroups } from './layering-check.ts';

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

describe('the files of src/kernel/', () => {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(REPOSITORY, 'src/kernel')) {
    graph.set(file, new Set(importsOf(REPOSITORY, file).flatMap((found) => (found.to?.startsWith('src/kernel/') === true ? [found.to] : []))));
  }
  const cycles = stronglyConnectedGroups(graph).map((group) => group.join(' → '));
  const known = KNOWN_CYCLES.map((group) => [...group].sort().join(' → '));

  it('import one another in no cycle, type imports counted, but for the known ones (the message flow is in none)', () => {
    expect(cycles.filter((cycle) => !known.includes(cycle))).toEqual([]);
  });

  it('list no known cycle that is gone', () => {
    expect(known.filter((cycle) => !cycles.includes(cycle))).toEqual([]);
  });

  it('are each at most 400 lines long, as formatted (a file past it holds more than one part)', () => {
    const long = [...graph.keys()].flatMap((file) => {
      const lines = readFileSync(join(REPOSITORY, file), 'utf8').split('\n').length - 1;
      return lines > 400 ? [`${file}: ${lines} lines`] : [];
    });
    expect(long).toEqual([]);
  });
});
