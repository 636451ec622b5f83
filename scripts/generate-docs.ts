/**
 * Writes the pages of docs/reference/ that come from the code: the manifest's fields (from the
 * manifest schema), the `loom` commands (from the command tree) and the HTTP API's OpenAPI
 * document (from src/http/openapi-routes.ts). Run it after changing any of them:
 *
 *   npx node scripts/generate-docs.ts
 *
 * `test/docs/generated-docs.test.ts` fails while a page on disk differs from what this writes.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedDocs } from './docs/generated-docs.ts';

const root = join(import.meta.dirname, '..');
for (const [path, text] of generatedDocs()) {
  const file = join(root, path);
  let before: string | undefined;
  try {
    before = readFileSync(file, 'utf8');
  } catch {
    before = undefined;
  }
  if (before === text) continue;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  process.stdout.write(`wrote ${path}\n`);
}
