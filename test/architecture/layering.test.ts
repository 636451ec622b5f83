import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkLayering, type LayeringProblem } from './layering-check.ts';
import { LAYERING } from './layering-rules.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/** Each rule of test/architecture/layering-check.ts, as the test that says it. */
const RULES: readonly (readonly [string, LayeringProblem['rule']])[] = [
  ['places every folder on a floor', 'unplaced folder'],
  ['has no cycle between folders, counting type imports', 'cycle'],
  ['imports another folder only through its index, but for the listed entries', 'around the index'],
  ['never imports a folder on a higher floor', 'up the floors'],
  ['keeps node: modules out of the kernel and the runtime, but for the allowed ones', 'node: import'],
  ['lists no exception that no import needs', 'stale exception'],
];

describe('the layering of src/', () => {
  const problems = checkLayering(REPOSITORY, LAYERING);

  it.each(RULES)('%s', (_name, rule) => {
    expect(problems.filter((problem) => problem.rule === rule).map((problem) => problem.message)).toEqual([]);
  });
});
