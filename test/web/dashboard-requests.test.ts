import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { API, type ApiRoute } from '../../src/wire/index.ts';
import { buildDashboard } from '../support/browser.ts';

const root = join(import.meta.dirname, '../..');
const ROUTES = Object.values(API) as ApiRoute[];

/** Every `.ts` and `.tsx` file under web/src. */
function webSources(): string[] {
  return readdirSync(join(root, 'web/src'), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("the dashboard's requests", () => {
  it('are built from the route table: web/src writes no path the daemon answers by hand', () => {
    // The first segment of every route's path: api, metrics, hooks, mcp, a2a, v1, .well-known.
    const firsts = new Set(ROUTES.map((route) => route.path.split('/')[1]));
    expect(firsts).toContain('api');
    const written = webSources().flatMap((file) => {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const found: string[] = [];
      const visit = (node: ts.Node): void => {
        // A string, or the start of a template (`/api/agents/${name}`).
        if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node)) {
          const first = /^\/([^/?#]*)/.exec(node.text)?.[1];
          if (first !== undefined && firsts.has(first))
            found.push(`${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.text}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
      return found;
    });
    expect(written).toEqual([]);
  });

  it("are sent from a bundle that holds the table's methods and paths, not its prose nor zod", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'loom-dashboard-requests-'));
    try {
      await buildDashboard(dir);
      const assets = join(dir, 'assets');
      const bundle = readdirSync(assets)
        .filter((name) => name.endsWith('.js'))
        .map((name) => readFileSync(join(assets, name), 'utf8'))
        .join('\n');
      // (Asked as booleans: a failure would print the whole bundle.)
      expect([API.cancelTurn.path, API.runBinding.path].filter((path) => !bundle.includes(path))).toEqual([]);
      // The summaries the OpenAPI document shows (those the minifier writes as they are), and zod, which the table's schemas are.
      const prose = ROUTES.map((route) => route.summary).filter((summary) => summary.length > 30 && !/[`'"\\]/.test(summary));
      expect(prose.length).toBeGreaterThan(10);
      expect(prose.filter((summary) => bundle.includes(summary))).toEqual([]);
      expect(bundle.includes('$ZodObject'), 'zod is in the bundle').toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
