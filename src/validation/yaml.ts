import { createRequire } from 'node:module';
import type * as YamlModule from 'yaml';

type Yaml = typeof YamlModule;
let yaml: Yaml | undefined;

/**
 * The YAML library, loaded on first use: only skills and forged-tool exports are YAML, and a
 * daemon that reads neither does not hold it.
 */
export function yamlLibrary(): Yaml {
  return (yaml ??= createRequire(import.meta.url)('yaml') as Yaml);
}
