import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

/** How an import reaches its target: at load (`value`), only for the compiler (`type`), or on first use (`dynamic`). */
export type ImportKind = 'value' | 'type' | 'dynamic';

/** One import found in a source file, as written and as resolved. */
export interface SourceImport {
  /** The importing file, relative to the repository root with `/` separators (`src/host/open-host.ts`). */
  from: string;
  /** 1-based line of the import in `from`. */
  line: number;
  /** The specifier as written (`../a2a/index.ts`, `node:fs`, `hono`). */
  specifier: string;
  /** The imported file for a relative specifier, relative to the repository root; `undefined` for a package or `node:` module. */
  to: string | undefined;
  kind: ImportKind;
}

/** Every `.ts` file under `root` (a folder relative to `repository`), tests (`*.test.ts`) left out. */
export function sourceFiles(repository: string, root: string): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(repository, folder), { withFileTypes: true })) {
      const path = posix.join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
    }
  };
  walk(root);
  return found.sort();
}

/**
 * Every import, re-export, dynamic `import()` and `import('…').T` type in `file`, read with the
 * TypeScript compiler's own parser (no regular expressions), so a specifier in a string or a
 * comment is never taken for an import.
 */
export function importsOf(repository: string, file: string): SourceImport[] {
  const text = readFileSync(join(repository, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: SourceImport[] = [];
  const add = (literal: ts.Expression | undefined, kind: ImportKind): void => {
    if (literal === undefined || !ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    const line = source.getLineAndCharacterOfPosition(literal.getStart(source)).line + 1;
    const to = specifier.startsWith('.') ? toPosix(relative(repository, join(repository, dirname(file), specifier))) : undefined;
    found.push({ from: file, line, specifier, to, kind });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node.moduleSpecifier, importDeclarationKind(node));
    } else if (ts.isExportDeclaration(node)) {
      add(node.moduleSpecifier, node.isTypeOnly ? 'type' : 'value');
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly ? 'type' : 'value');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], 'dynamic');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, 'type');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function importDeclarationKind(node: ts.ImportDeclaration): ImportKind {
  // `import { type A } from './a.ts'` still loads './a.ts' (Node's type stripping and TypeScript's
  // verbatimModuleSyntax both keep it as `import {} from './a.ts'`): only `import type` loads nothing.
  return node.importClause?.isTypeOnly === true ? 'type' : 'value';
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}
