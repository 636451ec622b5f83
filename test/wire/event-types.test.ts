import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { KernelEvent } from '../../src/kernel/index.ts';
import { AUDIT_KINDS, AUDIT_OUTCOMES, EVENT_TYPES, type EventType, RENAMED_EVENT_TYPES } from '../../src/wire/index.ts';

// Decision 0072: every type of event the audit log stores is in one registry, named
// `<noun>-<verb>` with a bare verb; the kernel's events carry exactly those types.

/**
 * The verbs an event type may end with, each bare (no `-ed`, no `-ing`, no noun such as `error`
 * or `fault`). A new verb is added here, in the same form.
 */
const VERBS = [
  'spawn',
  'suspend',
  'resume',
  'update',
  'kill',
  'request',
  'decide',
  'finish',
  'refuse',
  'cancel',
  'fail',
  'deny',
  'reject',
  'block',
  'time-out',
  'taint',
  'forge',
  'promote',
  'demote',
  'retire',
  'fire',
  'start',
  'notify',
  'emit',
  'skip',
  'miss',
  'install',
  'pair',
  'change',
  'deliver',
];
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** The types the A2A routes write to the audit log directly, not through the kernel's event bus. */
type A2aPushEventType = 'a2a-push-deliver' | 'a2a-push-fail';

/** The noun and verb of `type`, when it ends with a listed verb after a noun. */
function splitName(type: string): { noun: string; verb: string } | undefined {
  const verb = VERBS.find((candidate) => type.endsWith(`-${candidate}`));
  return verb === undefined ? undefined : { noun: type.slice(0, -verb.length - 1), verb };
}

/** Every string literal in the `.ts` files under `dir`, with where it is. */
function stringLiterals(dir: string): { text: string; at: string }[] {
  const found: { text: string; at: string }[] = [];
  const files = readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))
        found.push({ text: node.text, at: `${relative(dir, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}` });
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('the event types the audit log stores', () => {
  it('are each <noun>-<verb>, the verb bare', () => {
    const outside = Object.keys(EVENT_TYPES).filter((type) => {
      const parts = splitName(type);
      return !NAME.test(type) || parts === undefined || !NAME.test(parts.noun);
    });
    expect(outside).toEqual([]);
    expect(VERBS.filter((verb) => /(?:ed|ing|error|fault)$/.test(verb))).toEqual([]);
  });

  it("are the kernel events' types, and the A2A push records'", () => {
    expectTypeOf<KernelEvent['type'] | A2aPushEventType>().toEqualTypeOf<EventType>();
  });

  it('hold every type the audit filters name', () => {
    const named = [...Object.values(AUDIT_KINDS), ...Object.values(AUDIT_OUTCOMES)].flat();
    expect(named.filter((type) => !Object.hasOwn(EVENT_TYPES, type))).toEqual([]);
  });

  it('rename each old name to a registered type that is not itself renamed', () => {
    for (const [old, renamed] of Object.entries(RENAMED_EVENT_TYPES)) {
      expect(Object.hasOwn(EVENT_TYPES, renamed), `${old} → ${renamed}`).toBe(true);
      expect(Object.hasOwn(EVENT_TYPES, old), old).toBe(false);
    }
  });

  it('leave no old name in the sources or the dashboard but the registry and the migration', () => {
    const old = new Set(Object.keys(RENAMED_EVENT_TYPES));
    const kept = /^(?:wire\/event-types\.ts|store\/migrations\.ts):/;
    const root = join(import.meta.dirname, '../..');
    const written = [...stringLiterals(join(root, 'src')), ...stringLiterals(join(root, 'web/src')).map((found) => ({ ...found, at: `web/${found.at}` }))];
    // `model-error` is also the name of a kind of the audit filter (a noun, as every kind is).
    const found = written.filter(
      (literal) => old.has(literal.text) && !kept.test(literal.at) && !(literal.text === 'model-error' && /audit\.ts|events-page\.tsx/.test(literal.at)),
    );
    expect(found).toEqual([]);
  });
});
