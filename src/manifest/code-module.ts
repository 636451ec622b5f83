import { isAbsolute, resolve } from 'node:path';
import { type CodeSettings, DEFAULT_CODE_SETTINGS, type Manifest } from './schema.ts';

/** A code agent's module: its kind and its file. */
export interface CodeModuleRef {
  kind: 'wasm' | 'python';
  path: string;
}

/** The module of a `wasm:` or `python:` agent; undefined for a built-in one. */
export function codeModuleOf(manifest: Pick<Manifest, 'module'>): CodeModuleRef | undefined {
  const match = /^(wasm|python):(.+)$/.exec(manifest.module);
  if (match === null) return undefined;
  return { kind: match[1] as CodeModuleRef['kind'], path: match[2] as string };
}

/** `[code]` of a manifest, its defaults when it has none. */
export function codeSettingsOf(manifest: Pick<Manifest, 'code'>): CodeSettings {
  return manifest.code ?? DEFAULT_CODE_SETTINGS;
}

/**
 * The manifest with a relative code module path made absolute against `folder` (the manifest
 * file's own). A manifest without a folder (sent as text) must name its module absolutely.
 */
export function resolveModulePath(manifest: Manifest, folder: string): Manifest {
  const ref = codeModuleOf(manifest);
  if (ref === undefined || isAbsolute(ref.path)) return manifest;
  return { ...manifest, module: `${ref.kind}:${resolve(folder, ref.path)}` };
}
