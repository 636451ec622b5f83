/**
 * The pages of docs/reference/ that are written from the code, by path: `scripts/generate-docs.ts`
 * writes them, and `test/docs/generated-docs.test.ts` fails when one on disk differs.
 */
import { LOOM_VERSION } from '../../src/cli/index.ts';
import { openApiDocument } from '../../src/http/openapi-routes.ts';
import { cliReference } from './cli-reference.ts';
import { eventTypesReference } from './event-types-reference.ts';
import { httpRoutesReference } from './http-routes-reference.ts';
import { manifestReference } from './manifest-reference.ts';

/** Each generated page's path (relative to the repository) and its text. */
export function generatedDocs(): Map<string, string> {
  const openapi = openApiDocument({ version: LOOM_VERSION });
  return new Map([
    ['docs/reference/manifest.md', manifestReference()],
    ['docs/reference/cli.md', cliReference()],
    ['docs/reference/openapi.json', `${JSON.stringify(openapi, null, 2)}\n`],
    ['docs/reference/http-routes.md', httpRoutesReference(openapi)],
    ['docs/reference/event-types.md', eventTypesReference()],
  ]);
}
