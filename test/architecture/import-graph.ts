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
  /** The names taken (`import { a, b as c }` → `a`, `b`), or `'*'` for the whole module (a namespace, a default, `export *`, a dynamic import). */
  names: readonly string[] | '*';
}

/**
 * Every `.ts` file under `root` (a folder relative to `repository`), `node_modules` left out, and
 * tests (`*.test.ts`) too unless `tests` is set.
 */
export function sourceFiles(repository: string, root: string, options: { tests?: boolean } = {}): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(repository, folder), { withFileTypes: true })) {
      const path = posix.join(folder, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(path);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && (options.tests === true || !entry.name.endsWith('.test.ts'))) {
        found.push(path);
      }
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
  const add = (literal: ts.Expression | undefined, kind: ImportKind, names: readonly string[] | '*' = '*'): void => {
    if (literal === undefined || !ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    const line = source.getLineAndCharacterOfPosition(literal.getStart(source)).line + 1;
    const to = specifier.startsWith('.') ? toPosix(relative(repository, join(repository, dirname(file), specifier))) : undefined;
    found.push({ from: file, line, specifier, to, kind, names });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node.moduleSpecifier, importDeclarationKind(node), importedNames(node.importClause));
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      add(
        node.moduleSpecifier,
        node.isTypeOnly ? 'type' : 'value',
        clause !== undefined && ts.isNamedExports(clause) ? clause.elements.map(originalName) : '*',
      );
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly ? 'type' : 'value');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], 'dynamic');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, 'type', node.qualifier !== undefined && ts.isIdentifier(node.qualifier) ? [node.qualifier.text] : '*');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The names an index file exports by name (`export { a } from`, `export const a`, `export function a`, …). */
export function exportedNames(repository: string, file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(repository, file), 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  return source.statements.flatMap((statement): string[] => {
    if (ts.isExportDeclaration(statement))
      return statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause)
        ? statement.exportClause.elements.map((element) => element.name.text)
        : [];
    if (!ts.canHaveModifiers(statement) || ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword) !== true) return [];
    if (ts.isVariableStatement(statement))
      return statement.declarationList.declarations.flatMap((declaration) => (ts.isIdentifier(declaration.name) ? [declaration.name.text] : []));
    const named = statement as ts.DeclarationStatement;
    return named.name !== undefined && ts.isIdentifier(named.name) ? [named.name.text] : [];
  });
}

function importedNames(clause: ts.ImportClause | undefined): readonly string[] | '*' {
  if (clause === undefined) return [];
  if (clause.name !== undefined || clause.namedBindings === undefined || ts.isNamespaceImport(clause.namedBindings)) return '*';
  return clause.namedBindings.elements.map(originalName);
}

function originalName(element: ts.ImportSpecifier | ts.ExportSpecifier): string {
  return (element.propertyName ?? element.name).text;
}

function importDeclarationKind(node: ts.ImportDeclaration): ImportKind {
  // `import { type A } from './a.ts'` still loads './a.ts' (Node's type stripping and TypeScript's
  // verbatimModuleSyntax both keep it as `import {} from './a.ts'`): only `import type` loads nothing.
  return node.importClause?.isTypeOnly === true ? 'type' : 'value';
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}
