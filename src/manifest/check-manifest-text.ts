import { createRequire } from 'node:module';
import type { Node as JsonNode, ParseError as JsonParseError } from 'jsonc-parser';
import type * as TomlParser from 'toml-eslint-parser';
import type { AST } from 'toml-eslint-parser';
import { formatIssue, formatPath, jsoncLibrary } from '../validation/index.ts';
import { isJsonObject, type ManifestFormat, manifestIssueOptions, manifestTextProblem, NOT_A_JSON_OBJECT, readManifestToml } from './load-manifest.ts';
import { type Manifest, ManifestSchema } from './schema.ts';

/** One thing wrong with a manifest, and where it stands in the text (1-based; undefined when nowhere in particular). */
export interface ManifestIssue {
  /** `[model].model: required with provider, e.g. …`, as `loom manifest check` says it. */
  message: string;
  /** The field, as TOML or JSON writes it (`[model].model`); empty for the document or its syntax. */
  field: string;
  line: number | undefined;
  column: number | undefined;
}

/** What {@link checkManifestText} found: every issue with its line, and the warnings a valid manifest gets. */
export interface ManifestCheck {
  valid: boolean;
  format: ManifestFormat;
  errors: ManifestIssue[];
  /** Keys a table header swallowed (moved back, as the CLI warns); set when the manifest is valid or not. */
  warnings: string[];
  /** The validated manifest, when valid. */
  manifest?: Manifest;
}

type Path = readonly (string | number)[];

/** 1-based line and column of an offset in `text`. */
function positionOf(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

// The parsers that find where a key is written are loaded with the first check (the editor's):
// a daemon whose manifests nobody edits does not hold them.
const require = createRequire(import.meta.url);
let toml: typeof TomlParser | undefined;
const tomlParser = (): typeof TomlParser => (toml ??= require('toml-eslint-parser') as typeof TomlParser);

/** Where each key of a TOML document is written: path (as smol-toml reads it) → position of its key. */
function tomlPositions(text: string): Map<string, { line: number; column: number }> {
  const positions = new Map<string, { line: number; column: number }>();
  let program: AST.TOMLProgram;
  try {
    program = tomlParser().parseTOML(text);
  } catch {
    // The two parsers may differ on a corner of the syntax: without positions the errors still stand.
    return positions;
  }
  const keyOf = (key: AST.TOMLBare | AST.TOMLQuoted): string => (key.type === 'TOMLBare' ? key.name : key.value);
  const mark = (path: Path, node: { loc: AST.SourceLocation }): void => {
    const id = JSON.stringify(path);
    // The first place a path is written wins (a dotted key's tables are written where it is).
    if (!positions.has(id)) positions.set(id, { line: node.loc.start.line, column: node.loc.start.column + 1 });
  };
  const visitValue = (path: Path, value: AST.TOMLContentNode): void => {
    if (value.type === 'TOMLInlineTable') for (const entry of value.body) visitEntry(path, entry);
    else if (value.type === 'TOMLArray')
      value.elements.forEach((element, index) => {
        mark([...path, index], element);
        visitValue([...path, index], element);
      });
  };
  const visitEntry = (base: Path, entry: AST.TOMLKeyValue): void => {
    const keys = entry.key.keys.map(keyOf);
    keys.forEach((_, index) => mark([...base, ...keys.slice(0, index + 1)], entry));
    visitValue([...base, ...keys], entry.value);
  };
  for (const node of program.body[0].body) {
    if (node.type === 'TOMLKeyValue') visitEntry([], node);
    else {
      node.resolvedKey.forEach((_, index) => mark(node.resolvedKey.slice(0, index + 1), node));
      for (const entry of node.body) visitEntry(node.resolvedKey, entry);
    }
  }
  return positions;
}

/** Where `path` is written in a JSON document: its key (or the value, for an array element). */
function jsonPosition(tree: JsonNode | undefined, text: string, path: Path): { line: number; column: number } | undefined {
  if (tree === undefined) return undefined;
  const node = jsoncLibrary().findNodeAtLocation(tree, [...path]);
  if (node === undefined) return undefined;
  const at = node.parent?.type === 'property' ? node.parent.offset : node.offset;
  return positionOf(text, at);
}

/**
 * Where an issue about `path` points: the field itself, else the closest table that holds it
 * (a missing field points at its table's header), else nowhere.
 */
function locate(path: Path, find: (path: Path) => { line: number; column: number } | undefined): { line: number | undefined; column: number | undefined } {
  for (let length = path.length; length > 0; length -= 1) {
    const found = find(path.slice(0, length));
    if (found !== undefined) return found;
  }
  return { line: undefined, column: undefined };
}

/**
 * Checks a manifest's text with the steps of `parseManifest`, but answers every issue at once,
 * each with the line and column it is about, for an editor to mark as the user types.
 * @example checkManifestText('name = "x"\n[model]\nprovider = "openai"\n', 'toml').errors[0]
 * // { message: '[model].model: required with provider, e.g. model = "gpt-4o"; or …', field: '[model].model', line: 2, column: 1 }
 */
export function checkManifestText(text: string, format: ManifestFormat): ManifestCheck {
  const whole = (message: string, line?: number, column?: number): ManifestCheck => ({
    valid: false,
    format,
    errors: [{ message, field: '', line, column }],
    warnings: [],
  });
  const problem = manifestTextProblem(text);
  if (problem !== undefined) return whole(problem);
  let document: unknown;
  const warnings: string[] = [];
  let find: (path: Path) => { line: number; column: number } | undefined;
  if (format === 'toml') {
    const read = readManifestToml(text, 'manifest');
    if ('syntax' in read) return whole(`TOML syntax error: ${read.syntax.headline}`, read.syntax.line, read.syntax.column);
    document = read.table;
    warnings.push(...read.warnings);
    const positions = tomlPositions(text);
    find = (path) => positions.get(JSON.stringify(path));
  } else {
    const errors: JsonParseError[] = [];
    document = jsoncLibrary().parse(text, errors, { allowTrailingComma: false, disallowComments: true });
    const first = errors[0];
    if (first !== undefined) {
      const { line, column } = positionOf(text, first.offset);
      return whole(`JSON syntax error: ${jsoncLibrary().printParseErrorCode(first.error)}`, line, column);
    }
    if (!isJsonObject(document)) return whole(NOT_A_JSON_OBJECT, 1, 1);
    const tree = jsoncLibrary().parseTree(text);
    find = (path) => jsonPosition(tree, text, path);
  }
  const result = ManifestSchema.safeParse(document, { reportInput: true });
  if (result.success) return { valid: true, format, errors: [], warnings, manifest: result.data };
  const errors = result.error.issues.flatMap((issue) => {
    const messages = formatIssue(issue, manifestIssueOptions(format));
    // An issue about unknown keys gives a line per key, in the order of `issue.keys`.
    const paths: Path[] = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...(issue.path as Path), key]) : [issue.path as Path];
    return messages.map((message, index) => {
      const path = paths[index] ?? paths[0] ?? [];
      return { message, field: formatPath(path, format), ...locate(path, find) };
    });
  });
  errors.sort((first, second) => (first.line ?? Number.MAX_SAFE_INTEGER) - (second.line ?? Number.MAX_SAFE_INTEGER));
  return { valid: false, format, errors, warnings };
}
