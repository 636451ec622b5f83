import { createRequire } from 'node:module';
import type * as JsoncModule from 'jsonc-parser';

type Jsonc = typeof JsoncModule;
let jsonc: Jsonc | undefined;

/**
 * jsonc-parser, loaded on first use: only the manifest editor's check (where a key is written) and
 * a local model's streamed reply that opens with JSON read it, and a daemon that does neither does
 * not hold it.
 */
export function jsoncLibrary(): Jsonc {
  return (jsonc ??= createRequire(import.meta.url)('jsonc-parser') as Jsonc);
}
