import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedDocs } from '../../scripts/docs/generated-docs.ts';
import { ManifestSchema } from '../../src/manifest/index.ts';
import { EVENT_TYPES } from '../../src/wire/index.ts';

const root = join(import.meta.dirname, '../..');

/** What is on disk at `path`, or undefined when nothing is. */
function onDisk(path: string): string | undefined {
  try {
    return readFileSync(join(root, path), 'utf8');
  } catch {
    return undefined;
  }
}

describe('the generated pages of docs/reference/', () => {
  const pages = generatedDocs();

  it('are as scripts/generate-docs.ts writes them from the code today', () => {
    const stale = [...pages].filter(([path, text]) => onDisk(path) !== text).map(([path]) => path);
    expect(stale, `stale: run \`npx node scripts/generate-docs.ts\` and commit ${stale.join(', ')}`).toEqual([]);
  });

  it("list every manifest field, with the schema's description", () => {
    const manifest = pages.get('docs/reference/manifest.md') ?? '';
    for (const key of Object.keys(ManifestSchema.shape)) expect(manifest).toMatch(new RegExp(`\\| \\[?\`\\[{0,2}${key}[\\]\`.]`));
    expect(manifest).toContain('| `max_cost_per_hour` | number, ≥ 0 | `0` | USD over a rolling hour; 0 = no limit. |');
    expect(manifest).toContain('## `[[schedule.triggers]]`');
  });

  it("give every command's --help, options and examples included", () => {
    const cli = pages.get('docs/reference/cli.md') ?? '';
    expect(cli).toContain('## loom agent spawn');
    expect(cli).toContain('Usage: loom agent spawn [options] <manifest>');
    expect(cli).toContain('  $ loom agent spawn examples/agents/researcher.toml');
    expect(cli).toContain('## loom store migrate');
  });

  it('list every event type of the audit log, with what it was called before', () => {
    const types = pages.get('docs/reference/event-types.md') ?? '';
    for (const type of Object.keys(EVENT_TYPES)) expect(types).toContain(`| \`${type}\` |`);
    expect(types).toContain('| `tool-deny` | a tool call was refused: no capability, or an approval denied | `tool`, `refusal` | `tool-denied` |');
  });

  it('would notice a page that differs (the check above can fail)', () => {
    const [path, text] = [...pages][0] ?? ['', ''];
    expect(onDisk(path)).toBe(text);
    expect(`${text}x`).not.toBe(onDisk(path));
  });
});
