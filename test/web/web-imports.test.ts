import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const web = join(root, 'web/src');
const wire = join(root, 'src/wire');

/** Every `.ts` and `.tsx` file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** What `file` imports and re-exports, by specifier. */
function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((entry) => entry.fileName);
}

/** The names `file` declares as exported interfaces, type aliases, classes, functions or constants. */
function declaredNames(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  return source.statements.flatMap((statement) => {
    const exported = ts.canHaveModifiers(statement) && (ts.getModifiers(statement) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) return [];
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isFunctionDeclaration(statement))
      return statement.name === undefined ? [] : [statement.name.text];
    if (ts.isVariableStatement(statement))
      return statement.declarationList.declarations.flatMap((declaration) => (ts.isIdentifier(declaration.name) ? [declaration.name.text] : []));
    return [];
  });
}

const inside = (path: string, dir: string): boolean => path === dir || path.startsWith(dir + sep);

describe("the dashboard's wire types", () => {
  it('come from src/wire: web/src imports nothing of the daemon but src/wire', () => {
    const strays = sources(web).flatMap((file) =>
      importsOf(file)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => resolve(dirname(file), specifier))
        .filter((target) => !inside(target, web) && !inside(target, wire))
        .map((target) => `${relative(root, file)} imports ${relative(root, target)}`),
    );
    expect(strays).toEqual([]);
  });

  it('are written once: web/src declares none of the names src/wire exports', () => {
    const wireNames = new Set(sources(wire).flatMap(declaredNames));
    expect(wireNames).toContain('AgentView');
    expect(wireNames).toContain('AUDIT_KINDS');
    const copies = sources(web).flatMap((file) =>
      declaredNames(file)
        .filter((name) => wireNames.has(name))
        .map((name) => `${relative(root, file)}: ${name}`),
    );
    expect(copies).toEqual([]);
  });

  it("src/wire's views depend on nothing (no package, no node:); its route table and request schemas on zod only", () => {
    const views = new Set(importsOf(join(wire, 'views.ts')).map((specifier) => resolve(wire, specifier)));
    const outside = sources(wire).flatMap((file) =>
      importsOf(file)
        .filter((specifier) => !specifier.startsWith('./') && (views.has(file) || specifier !== 'zod'))
        .map((specifier) => `${relative(root, file)} imports ${specifier}`),
    );
    expect(views.size).toBeGreaterThan(5);
    expect(outside).toEqual([]);
  });

  it("web/src takes values only from src/wire's views, its client and its route table, and types alone from the rest (zod stays out of the bundle)", () => {
    const views = join(wire, 'views.ts');
    // The client imports types alone; the route table's build for the dashboard (web/vite.config.ts) is its methods, paths and answers' media.
    const values = [views, join(wire, 'api-client.ts'), join(wire, 'routes.ts')];
    const valueImports = sources(web).flatMap((file) => {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      return source.statements.flatMap((statement) => {
        if (
          !(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) ||
          statement.moduleSpecifier === undefined ||
          !ts.isStringLiteral(statement.moduleSpecifier)
        )
          return [];
        const target = resolve(dirname(file), statement.moduleSpecifier.text);
        const typeOnly = ts.isImportDeclaration(statement) ? statement.importClause?.isTypeOnly === true : statement.isTypeOnly;
        return inside(target, wire) && !values.includes(target) && !typeOnly ? [`${relative(root, file)} imports values of ${relative(root, target)}`] : [];
      });
    });
    expect(valueImports).toEqual([]);
  });
});
