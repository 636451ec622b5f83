import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('README.md', () => {
  it('fits on a screen or two: at most 200 lines, the reference in docs/', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });

  it('opens its quick start with the commands CI runs (.ci/run): npm install, npm start, npm test', () => {
    const quickStart = readme.slice(readme.indexOf('## Quick start'));
    expect(/```sh\n([^`]*)```/.exec(quickStart)?.[1]).toBe('npm install\nnpm start\nnpm test\n');
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^npm install$/m);
    expect(ci).toMatch(/^npm test$/m);
  });

  it('offers the one command that needs no key, and the npm start -- --port form', () => {
    expect(readme).toContain('`npx loom demo`');
    expect(readme).toContain('`npm start -- --port 4210`');
  });
});
