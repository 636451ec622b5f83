import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ManifestError } from '../errors/index.ts';
import { type FormatIssueOptions, formatIssues, objectKeysAt, type PathStyle, safeParseJson } from '../validation/index.ts';
import { resolveModulePath } from './code-module.ts';
import { hoistMisplacedKeys } from './hoist-misplaced-keys.ts';
import { type Manifest, ManifestSchema, MANIFEST_KEYS } from './schema.ts';

/** The two formats a manifest may be written in. */
export type ManifestFormat = 'toml' | 'json';

/** A validated manifest and the warnings met on the way (each a full sentence). */
export interface LoadedManifest {
  manifest: Manifest;
  warnings: string[];
}

/** Options for {@link parseManifest}. */
export interface ParseManifestOptions {
  /** How the manifest is named in messages: its file name, or `<stdin>`. */
  source: string;
  /** The format; guessed from the content when omitted. */
  format?: ManifestFormat;
}

/** Manifests larger than this are refused before parsing. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;

/** JSON when the first non-blank character opens an object, TOML otherwise. */
export function detectManifestFormat(text: string): ManifestFormat {
  return text.trimStart().startsWith('{') ? 'json' : 'toml';
}

function fail(source: string, problem: string, details: string[] = []): never {
  const more = details.length === 0 ? '' : `\n${details.map((line) => `  ${line}`).join('\n')}`;
  throw new ManifestError(`cannot load manifest "${source}": ${problem}${more}`, {
    details: { source, problem, more: details },
  });
}

// The steps below are shared by parseManifest and checkManifestText (which answers every issue
// with its position instead of throwing the first), so both say the same things.

/** Why `text` cannot be a manifest, whatever it says: it is empty, or too large; undefined when it may be one. */
export function manifestTextProblem(text: string): string | undefined {
  if (text.trim() === '') return 'the manifest is empty; it needs at least a name, e.g. name = "my-agent"';
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) return `the manifest is larger than ${MAX_MANIFEST_BYTES} bytes`;
  return undefined;
}

/** A TOML syntax error: its first line, the lines after it that show where (none blank), and its position (1-based). */
export interface TomlSyntaxError {
  headline: string;
  excerpt: string[];
  line: number;
  column: number;
}

/**
 * A manifest's TOML as a table, the keys a table header swallowed put back where they were meant
 * (a warning each, naming `source`); or its syntax error.
 * @throws what the TOML parser throws other than a syntax error.
 */
export function readManifestToml(text: string, source: string): { table: Record<string, unknown>; warnings: string[] } | { syntax: TomlSyntaxError } {
  let table: Record<string, unknown>;
  try {
    table = parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const [headline = 'invalid TOML', ...excerpt] = error.message.replace(/^Invalid TOML document: /, '').split('\n');
    return { syntax: { headline, excerpt: excerpt.filter((line) => line.trim() !== ''), line: error.line, column: error.column } };
  }
  return { table, warnings: hoistMisplacedKeys(table, source, text) };
}

/** What a JSON manifest that is not an object is told. */
export const NOT_A_JSON_OBJECT = 'expected a JSON object at the top level';

/** Whether a parsed JSON manifest is an object (a manifest's top level must be one). */
export function isJsonObject(document: unknown): boolean {
  return typeof document === 'object' && document !== null && !Array.isArray(document);
}

/** Advice for an unknown key that is a top-level key of the manifest: a table header above it swallowed it. */
export function unknownKeyHint(key: string, path: readonly PropertyKey[]): string | undefined {
  if (path.length === 0 || !MANIFEST_KEYS.has(key)) return undefined;
  return `"${key}" is a top-level key: in TOML, a key after a [table] header belongs to that table, so move it above the first header`;
}

/** How a manifest's schema issues are worded in `style`: an unknown key with the keys it may have meant, and the hint above. */
export function manifestIssueOptions(style: PathStyle): FormatIssueOptions {
  return { style, knownKeys: (path) => objectKeysAt(ManifestSchema, path), unknownKeyHint };
}

/** The most characters of a line shown around a JSON syntax error: a one-line body may be long. */
const EXCERPT_CHARS = 80;

/**
 * The lines at a JSON syntax error, as a TOML one is shown: the line before and the line itself,
 * numbered, and a caret under the column the parser's message names (none when it names none).
 * Each line is cut to {@link EXCERPT_CHARS} around the column (a one-line body may be long), its
 * tabs shown as spaces so that the caret stays under the column (the parser counts a tab as one).
 */
function jsonExcerpt(text: string, message: string): string[] {
  const at = /\(line (\d+) column (\d+)\)/.exec(message);
  if (at === null) return [];
  const line = Number(at[1]);
  const column = Number(at[2]);
  const lines = text.split(/\r\n|\r|\n/);
  const from = Math.max(0, column - 1 - EXCERPT_CHARS / 2);
  const shown = (number: number): string => {
    const whole = (lines[number - 1] ?? '').replaceAll('\t', ' ');
    const cut = whole.slice(from, from + EXCERPT_CHARS);
    return `${from > 0 ? '…' : ''}${cut}${from + EXCERPT_CHARS < whole.length ? '…' : ''}`;
  };
  const width = String(line).length;
  const label = (number: number): string => `${String(number).padStart(width)}:  `;
  const numbered = [line - 1, line].filter((number) => number >= 1 && number <= lines.length).map((number) => `${label(number)}${shown(number)}`);
  return [...numbered, `${' '.repeat(label(line).length + (from > 0 ? 1 : 0) + column - 1 - from)}^`];
}

function parseJsonText(text: string, source: string): unknown {
  const result = safeParseJson(text);
  if (!result.ok) fail(source, `JSON syntax error: ${result.message}`, jsonExcerpt(text, result.message));
  return result.value;
}

/**
 * Parses and validates a manifest's text. Every default is filled in; TOML keys that a table
 * header swallowed by accident are put back where they were meant, with a warning each.
 * @throws {ManifestError} naming the source, the field path and what was expected.
 * @example parseManifest('name = "helper"', { source: 'helper.toml' }).manifest.module // "builtin:assistant"
 */
export function parseManifest(text: string, options: ParseManifestOptions): LoadedManifest {
  const { source } = options;
  const problem = manifestTextProblem(text);
  if (problem !== undefined) fail(source, problem);
  const format = options.format ?? detectManifestFormat(text);
  let document: unknown;
  const warnings: string[] = [];
  if (format === 'toml') {
    const read = readManifestToml(text, source);
    if ('syntax' in read)
      fail(source, `TOML syntax error at line ${read.syntax.line}, column ${read.syntax.column}: ${read.syntax.headline}`, read.syntax.excerpt);
    document = read.table;
    warnings.push(...read.warnings);
  } else {
    document = parseJsonText(text, source);
    if (!isJsonObject(document)) fail(source, NOT_A_JSON_OBJECT);
  }
  const result = ManifestSchema.safeParse(document, { reportInput: true });
  if (!result.success) {
    const [first = 'invalid manifest', ...rest] = formatIssues(result.error, manifestIssueOptions(format));
    fail(source, first, rest.length === 0 ? [] : [`and ${rest.length} more:`, ...rest]);
  }
  return { manifest: result.data, warnings };
}

function formatOfPath(path: string): ManifestFormat | undefined {
  const extension = extname(path).toLowerCase();
  if (extension === '.toml') return 'toml';
  if (extension === '.json') return 'json';
  return undefined;
}

/**
 * Reads, parses and validates a manifest file (TOML or JSON by extension, else by content).
 * A relative `path` is read from `options.cwd` (default: the process's); messages name the
 * file as given. A relative `wasm:` or `python:` module path is resolved against the file's
 * folder.
 * @throws {ManifestError} for a missing, unreadable, empty or invalid file.
 */
export async function loadManifestFile(path: string, options: { cwd?: string } = {}): Promise<LoadedManifest> {
  const absolute = resolve(options.cwd ?? process.cwd(), path);
  let text: string;
  try {
    const info = await stat(absolute);
    if (info.isDirectory()) fail(path, 'it is a directory, not a file');
    if (info.size > MAX_MANIFEST_BYTES) fail(path, `the file is larger than ${MAX_MANIFEST_BYTES} bytes`);
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    if (error instanceof ManifestError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') fail(path, 'no such file');
    if (code === 'EACCES') fail(path, 'permission denied');
    fail(path, error instanceof Error ? error.message : String(error));
  }
  const format = formatOfPath(path);
  if (format === undefined && /^\.ya?ml$/i.test(extname(path))) fail(path, 'a manifest is TOML (.toml) or JSON (.json), not YAML: write it in one of those');
  const loaded = parseManifest(text, format === undefined ? { source: path } : { source: path, format });
  // A code agent's module is found next to its manifest.
  return { ...loaded, manifest: resolveModulePath(loaded.manifest, dirname(absolute)) };
}
