/** A SKILL.md whose front matter is a YAML alias bomb is refused naming the file and the field. */
import { expect, it } from 'vitest';
import { PackageError } from '../../src/errors/index.ts';
import { parseSkillFile } from '../../src/packages/skills.ts';

const BOMB = [
  '---',
  'name: bomb',
  'description: Laughs.',
  'metadata:',
  '  a: &a [x, x, x, x, x, x, x, x, x]',
  '  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
  '  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
  '  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
  '  e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]',
  '---',
  'Body',
  '',
].join('\n');

function refusalOf(text: string, source: string): PackageError {
  try {
    parseSkillFile(text, source);
  } catch (error) {
    if (error instanceof PackageError) return error;
    throw error;
  }
  throw new Error('expected the skill to be refused');
}

it("refuses a SKILL.md whose front matter's aliases expand too far, naming the file, the field and its line", () => {
  const error = refusalOf(BOMB, 'skills/bomb/SKILL.md');
  expect(error.message).toMatch(
    /^cannot load skill "skills\/bomb\/SKILL\.md": the front matter's field "metadata" \(line 4\) expands its YAML aliases too far \(Excessive alias count[^)]*\); write the value out, or use fewer aliases/,
  );
});

it('names the front matter as a whole when the aliases are in its keys', () => {
  const keys = [
    '---',
    'name: &a [x, x, x, x, x, x, x, x, x]',
    'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
    'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
    '? [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
    ': x',
    '---',
    'Body',
  ].join('\n');
  const error = refusalOf(keys, 'skills/bomb/SKILL.md');
  expect(error.message).toMatch(/^cannot load skill "skills\/bomb\/SKILL\.md": the front matter expands its YAML aliases too far \(Excessive alias count/);
});
