import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifestFile } from '../../src/manifest/index.ts';

const folder = join(import.meta.dirname, '../../examples/agents');
const files = (await readdir(folder)).filter((file) => file.endsWith('.toml') || file.endsWith('.json'));

describe('the example manifests', () => {
  it('are all there', () => {
    expect(files.length).toBeGreaterThanOrEqual(7);
  });

  for (const file of files) {
    it(`load: ${file}`, async () => {
      const { manifest, warnings } = await loadManifestFile(join(folder, file));
      expect(manifest.name).not.toBe('unnamed');
      // Only the spec's researcher, kept as printed, has keys TOML puts in tables.
      expect(warnings).toHaveLength(file === 'researcher.toml' ? 8 : 0);
    });
  }
});
