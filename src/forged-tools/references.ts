import type { JsonObject, JsonValue } from '../contracts/index.ts';
import type { ComposeStep } from './forge-request.ts';

/**
 * References in a compose step's `inputMapping` (spec/02): `$input`, `$input.field`, `$prev`,
 * `$prev.field`, `$steps.<name>`, `$steps.<name>.field`, deeper paths with more dots. A value
 * that is exactly one reference becomes the value it points to (any JSON); references inside a
 * longer string are replaced by their text (strings as they are, anything else as JSON). Every
 * other value is a literal.
 */
const REFERENCE = /\$(input|prev|steps\.[A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)/g;

/** A reference found in a mapping: what it points at, and the path below. */
interface Reference {
  text: string;
  root: 'input' | 'prev' | { step: string };
  path: string[];
}

function referencesIn(text: string): Reference[] {
  return [...text.matchAll(REFERENCE)].map((match) => {
    const head = match[1] ?? '';
    const path = (match[2] ?? '').split('.').filter((part) => part !== '');
    const root = head === 'input' || head === 'prev' ? head : { step: head.slice('steps.'.length) };
    return { text: match[0], root, path };
  });
}

/** Every string inside a JSON value (mapping values may be nested objects and arrays). */
function stringsOf(value: JsonValue): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsOf);
  return [];
}

/**
 * What is wrong with a compose tool's references, one message per problem, naming the step:
 * a `$prev` in the first step, a `$steps.x` naming no earlier step, a `$input.x` naming no
 * property of the input schema (when it declares properties).
 */
export function referenceProblems(steps: readonly ComposeStep[], inputSchema: JsonObject): string[] {
  const properties = inputSchema['properties'];
  const declared = properties !== null && typeof properties === 'object' && !Array.isArray(properties) ? new Set(Object.keys(properties)) : undefined;
  const problems: string[] = [];
  steps.forEach((step, index) => {
    const earlier = new Set(steps.slice(0, index).map((previous) => previous.name));
    for (const text of stringsOf(step.inputMapping)) {
      for (const reference of referencesIn(text)) {
        const where = `step ${index + 1} "${step.name}"`;
        if (reference.root === 'prev' && index === 0)
          problems.push(`${where}: "${reference.text}" points nowhere: the first step has no previous step (use $input)`);
        else if (typeof reference.root === 'object' && !earlier.has(reference.root.step)) {
          problems.push(
            `${where}: "${reference.text}" points nowhere: no earlier step is named "${reference.root.step}"${earlier.size === 0 ? '' : ` (earlier steps: ${[...earlier].join(', ')})`}`,
          );
        } else if (reference.root === 'input' && declared !== undefined && reference.path[0] !== undefined && !declared.has(reference.path[0])) {
          problems.push(
            `${where}: "${reference.text}" points nowhere: the input schema has no property "${reference.path[0]}"${declared.size === 0 ? '' : ` (it has ${[...declared].join(', ')})`}`,
          );
        }
      }
    }
  });
  return problems;
}

/** What references resolve against while a compose tool runs. */
export interface ReferenceScope {
  input: JsonObject;
  /** Outputs of the steps run so far, by name, in order. */
  steps: ReadonlyMap<string, JsonValue>;
  prev: JsonValue | undefined;
}

/**
 * Thrown when a step's mapping cannot be resolved: a reference names a field the value does not
 * have, or the input it builds is over {@link MAX_MAPPED_INPUT_CHARS}.
 */
export class MappingReferenceError extends Error {
  override readonly name = 'MappingReferenceError';
}

/**
 * The most characters one compose step's resolved input may hold: the characters of its strings,
 * keys and other scalars (JSON punctuation aside), whether written in the mapping or brought in by
 * references. Ten times the largest body a web tool reads by default, so no real pipeline comes
 * near it; a mapping that repeats a reference to multiply an output (`"$prev.output"` 4,000 times
 * over a 50,000-character text would be 200 MB) fails here, counted as it resolves, before the
 * text is built.
 */
export const MAX_MAPPED_INPUT_CHARS = 10_000_000;

/** Counts a step's input as it is resolved; throws once it passes {@link MAX_MAPPED_INPUT_CHARS}. */
class InputBudget {
  #used = 0;

  add(chars: number): void {
    this.#used += chars;
    if (this.#used > MAX_MAPPED_INPUT_CHARS) {
      throw new MappingReferenceError(
        `cannot build the input: its mapping resolves to more than ${MAX_MAPPED_INPUT_CHARS.toLocaleString('en-US')} characters, the limit for one step's input (MAX_MAPPED_INPUT_CHARS); refer to a large value once, not many times`,
      );
    }
  }

  /** Counts a value brought in whole, stopping as soon as the limit is passed. */
  addValue(value: JsonValue): void {
    if (typeof value === 'string') this.add(value.length);
    else if (Array.isArray(value)) for (const item of value) this.addValue(item);
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        this.add(key.length);
        this.addValue(item);
      }
    } else this.add(String(value).length);
  }
}

function lookup(reference: Reference, scope: ReferenceScope): JsonValue {
  let value: JsonValue | undefined = reference.root === 'input' ? scope.input : reference.root === 'prev' ? scope.prev : scope.steps.get(reference.root.step);
  for (const key of reference.path) {
    value = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, key) ? value[key] : undefined;
    if (value === undefined) throw new MappingReferenceError(`"${reference.text}" points nowhere: there is no "${key}" there`);
  }
  if (value === undefined) throw new MappingReferenceError(`"${reference.text}" points nowhere`);
  return value;
}

function resolveValue(value: JsonValue, scope: ReferenceScope, budget: InputBudget): JsonValue {
  if (typeof value === 'string') {
    const found = referencesIn(value);
    if (found.length === 1 && found[0]?.text === value) {
      const resolved = lookup(found[0], scope);
      budget.addValue(resolved);
      return resolved;
    }
    // The literal text first, then each reference's text as it is resolved: a mapping that
    // multiplies a large value fails at the limit before the result is concatenated.
    budget.add(value.length - found.reduce((sum, reference) => sum + reference.text.length, 0));
    return found.length === 0
      ? value
      : value.replace(REFERENCE, (text) => {
          const resolved = lookup(referencesIn(text)[0] as Reference, scope);
          budget.addValue(resolved);
          return typeof resolved === 'string' ? resolved : JSON.stringify(resolved);
        });
  }
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, scope, budget));
  if (value !== null && typeof value === 'object') {
    const resolved: JsonObject = {};
    // Defined, not assigned: a key "__proto__" stays a key.
    for (const [key, item] of Object.entries(value)) {
      budget.add(key.length);
      Object.defineProperty(resolved, key, { value: resolveValue(item, scope, budget), enumerable: true, writable: true, configurable: true });
    }
    return resolved;
  }
  budget.add(String(value).length);
  return value;
}

/**
 * A step's input from its mapping.
 * @throws {MappingReferenceError} when a reference names a field the value does not have, or
 * the input would be over {@link MAX_MAPPED_INPUT_CHARS} (thrown before it is built).
 */
export function resolveMapping(mapping: JsonObject, scope: ReferenceScope): JsonObject {
  return resolveValue(mapping, scope, new InputBudget()) as JsonObject;
}
