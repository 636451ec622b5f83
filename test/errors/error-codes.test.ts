import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it, vi } from 'vitest';
import {
  AgentNotFoundError,
  ERROR_CODES,
  HttpRequestError,
  isErrorCode,
  isLoomError,
  LoomError,
  PackageError,
  toErrorResponse,
  TurnCancelledError,
} from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';

const src = join(import.meta.dirname, '../../src');
const CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

/** Every `.ts` file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The string literals an expression can take (both branches of a `?:`). */
function literals(node: ts.Expression | undefined): string[] {
  if (node === undefined) return [];
  if (ts.isStringLiteral(node)) return [node.text];
  if (ts.isConditionalExpression(node)) return [...literals(node.whenTrue), ...literals(node.whenFalse)];
  if (ts.isParenthesizedExpression(node)) return literals(node.expression);
  return [];
}

/**
 * Every error code the sources name where an error is made: the first argument of `new …Error(…)`
 * and of `super(…)` in a class extending one, and `code` of an `error: { … }` body written out.
 */
function codesThrownIn(files: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const note = (codes: string[], node: ts.Node): void => {
      for (const code of codes)
        if (CODE.test(code) && !found.has(code)) found.set(code, `${relative(src, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && /Error$/.test(node.expression.getText(source))) note(literals(node.arguments?.[0]), node);
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.SuperKeyword) {
        const heritage = ts.findAncestor(node, ts.isClassLike)?.heritageClauses?.[0]?.types[0]?.expression.getText(source) ?? '';
        if (/Error$/.test(heritage)) note(literals(node.arguments[0]), node);
      }
      if (ts.isPropertyAssignment(node) && node.name.getText(source) === 'error' && ts.isObjectLiteralExpression(node.initializer)) {
        for (const property of node.initializer.properties)
          if (ts.isPropertyAssignment(property) && property.name.getText(source) === 'code') note(literals(property.initializer), property);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('the registry of error codes', () => {
  it('holds every code an error is made with in src/', () => {
    const found = codesThrownIn(sources(src));
    // The scan itself finds codes of each way an error is made.
    expect([...found.keys()]).toEqual(
      expect.arrayContaining(['AGENT_NOT_FOUND', 'INVALID_REQUEST', 'PLAN_INVALID', 'INTERNAL', 'PORT_IN_USE', 'CANNOT_LISTEN']),
    );
    const missing = [...found].filter(([code]) => !isErrorCode(code)).map(([code, where]) => `${code} (${where})`);
    expect(missing, 'codes thrown in src/ but not in src/errors/error-codes.ts').toEqual([]);
  });

  it('answers each code over HTTP with its registered status, whoever is at fault', () => {
    const logger = createSilentLogger();
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      if (code === 'INTERNAL' || code === 'STORE_FAILURE') continue;
      for (const category of ['user', 'system', 'third-party'] as const) {
        if (code === 'MODEL_CALL_FAILED' && category === 'user') continue;
        expect(toErrorResponse(new LoomError(code, category, 'x'), 0, logger).status, `${code} (${category})`).toBe(entry.status);
      }
    }
    expect(toErrorResponse(new HttpRequestError('BODY_TOO_LARGE', 'too big'), 0, logger).status).toBe(413);
    expect(toErrorResponse(new TurnCancelledError('stopped'), 0, logger).status).toBe(409);
  });
});

describe('LoomError.isInstance', () => {
  it('knows a Loom error from another copy of the module, where instanceof does not', async () => {
    // A fresh module graph loads src/errors a second time, as the bundled daemon and the sources are two copies.
    vi.resetModules();
    const copy = await import('../../src/errors/index.ts');
    expect(copy.LoomError).not.toBe(LoomError);
    const foreign = new copy.AgentNotFoundError('ghost');
    expect(foreign instanceof LoomError).toBe(false);
    expect(LoomError.isInstance(foreign)).toBe(true);
    expect(isLoomError(foreign)).toBe(true);
    expect(AgentNotFoundError.isInstance(foreign)).toBe(true);
    expect(PackageError.isInstance(foreign)).toBe(false);
    expect(copy.LoomError.isInstance(new AgentNotFoundError('here'))).toBe(true);
  });

  it('says no to an error without the mark, and to things that are not errors', () => {
    const lookalike = Object.assign(new Error('no agent'), { code: 'AGENT_NOT_FOUND', category: 'user', details: {} });
    for (const value of [lookalike, { code: 'AGENT_NOT_FOUND' }, null, undefined, 'AGENT_NOT_FOUND']) expect(LoomError.isInstance(value)).toBe(false);
    expect(AgentNotFoundError.isInstance(new PackageError('bad'))).toBe(false);
    expect(LoomError.isInstance(new PackageError('bad'))).toBe(true);
  });
});
