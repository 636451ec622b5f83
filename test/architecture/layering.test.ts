import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkLayering, type LayeringProblem } from './layering-check.ts';
import { LAYERING } from './layering-rules.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

function messages(problems: readonly LayeringProblem[], rule: LayeringProblem['rule']): string[] {
  return problems.filter((problem) => problem.rule === rule).map((problem) => problem.message);
}

describe('the layering of src/', () => {
  const problems = checkLayering(REPOSITORY, LAYERING);

  it('places every folder on a floor', () => {
    expect(messages(problems, 'unplaced folder')).toEqual([]);
  });

  it('has no cycle between folders, counting type imports', () => {
    expect(messages(problems, 'cycle')).toEqual([]);
  });

  it('imports another folder only through its index, but for the listed entries', () => {
    expect(messages(problems, 'around the index')).toEqual([]);
  });

  it('never imports a folder on a higher floor', () => {
    expect(messages(problems, 'up the floors')).toEqual([]);
  });

  it('keeps node: modules out of the kernel and the runtime, but for the allowed ones', () => {
    expect(messages(problems, 'node: import')).toEqual([]);
  });

  it('lists no exception that no import needs', () => {
    expect(messages(problems, 'stale exception')).toEqual([]);
  });
});
