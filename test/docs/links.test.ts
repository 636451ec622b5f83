import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, headingSlug, linksIn, markdownFiles, problemOf } from './markdown-links.ts';

const root = join(import.meta.dirname, '../..');

/** The project's own Markdown: the README, CONTRIBUTING and everything under docs/. */
function projectMarkdown(): string[] {
  return [join(root, 'README.md'), join(root, 'CONTRIBUTING.md'), ...markdownFiles(join(root, 'docs'))].filter((file) => existsSync(file));
}

describe('links in README.md, CONTRIBUTING.md and docs/', () => {
  it('point at files that exist, and at headings that exist in them', () => {
    const files = projectMarkdown();
    const links = files.flatMap((file) => linksIn(file));
    // The walk found the docs and their links, so a walk that found nothing cannot pass.
    expect(files.length).toBeGreaterThan(20);
    expect(links.length).toBeGreaterThan(200);
    const broken = links.map((link) => problemOf(link, root)).filter((problem) => problem !== undefined);
    expect(broken).toEqual([]);
  });

  it('finds a broken file, a broken anchor and an anchor that exists (the check above can fail)', () => {
    const folder = mkdtempSync(join(tmpdir(), 'loom-links-'));
    try {
      const page = join(folder, 'page.md');
      writeFileSync(
        page,
        '# A page\n\n## The `[model]` table: keys & defaults\n\n[ok](#the-model-table-keys--defaults) [gone](missing.md) [no anchor](#nowhere) [web](https://example.com)\n\n```\n[in code](nowhere.md)\n```\n',
      );
      const problems = linksIn(page).map((link) => problemOf(link, folder));
      expect(problems[0]).toBeUndefined();
      expect(problems[1]).toMatch(/"missing\.md" points at missing\.md, which does not exist/);
      expect(problems[2]).toMatch(/has no heading with the anchor #nowhere/);
      expect(problems[3]).toBeUndefined();
      expect(problems).toHaveLength(4);
      expect(anchorsOf(page)).toEqual(new Set(['a-page', 'the-model-table-keys--defaults']));
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('computes anchors as GitHub does', () => {
    expect(headingSlug("MCP: tools from MCP servers, and Loom's agents as MCP tools")).toBe('mcp-tools-from-mcp-servers-and-looms-agents-as-mcp-tools');
    expect(headingSlug('Code agents: wasm and Python')).toBe('code-agents-wasm-and-python');
    expect(headingSlug('`loom agent spawn`')).toBe('loom-agent-spawn');
    expect(headingSlug('`[tools.<name>]`')).toBe('toolsname');
  });
});
