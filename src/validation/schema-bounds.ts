/**
 * Bounds the work of checking values against a JSON Schema Loom did not write (a forged tool's,
 * an MCP server's), before Ajv compiles it. A schema may make one value be checked against the
 * same subschema many times over: an `anyOf` of two branches that both lead to one definition
 * doubles the checks of every part of the value below it, and through a recursive `$ref` it does so
 * again at every level of the value (2^depth: issue 36). The schema is read as an automaton over
 * the value's paths (each subschema a state; `allOf`, `anyOf`, `$ref`… keep the value, `properties`,
 * `items`… move into a part of it), and every set of subschemas one part of a value can meet is
 * worked out, each counted as often as it is reached. Ajv's own keyword groups are typed (a
 * `properties` runs only on an object, an `items` only on an array), so a recursive schema of JSON
 * values (an `anyOf` of a `string`, an `array` of itself and an `object` of itself) stays at one
 * check per part, where one whose branches both lead back into it is refused.
 */
import type { SchemaDialect } from './json-schema.ts';
import { describePath, type Edge, edgesOf, escapeToken, type Label, type SchemaNode } from './schema-automaton.ts';
import {
  LIMITS,
  MAX_SCHEMA_ANALYSIS_STEPS,
  MAX_SCHEMA_BRANCHES,
  MAX_SCHEMA_CHECKS,
  MAX_SCHEMA_DEPTH,
  MAX_SCHEMA_NODES,
  MAX_SCHEMA_REPEATS,
  SATURATED,
} from './schema-limits.ts';
import { SchemaRefusedError } from './schema-refused-error.ts';
import { repeatsRefusal } from './schema-repeat-refusal.ts';

/** What checking values against an accepted schema may cost. */
export interface SchemaBounds {
  /** The most subschemas one part of a value is checked against (each counted as often as it is reached), at least 1. */
  checksPerValue: number;
  /** Whether the schema asks for `uniqueItems`: every pair of an array's items compared. */
  comparesItems: boolean;
  /** Whether the schema runs regular expressions (`pattern`, `patternProperties`). */
  matchesPatterns: boolean;
}

/** A `$ref` found by the walk, resolved once the walk is done. */
interface PendingReference {
  node: number;
  at: string;
  reference: string;
}

/** What working out one set of subschemas costs the analysis beyond its size, in steps (its maps and key). */
const STATE_COST = 10;

const LIST_COMBINATORS = new Set(['allOf', 'anyOf', 'oneOf']);
const ONE_SCHEMA_SAME = new Set(['not', 'if', 'then', 'else']);
const DEFINITIONS = new Set(['$defs', 'definitions']);
/** Keywords whose subschemas Ajv compiles side by side, each nested in the code of the one before. */
const SIDE_BY_SIDE = new Set([...LIST_COMBINATORS, 'properties', 'patternProperties', 'dependentSchemas', 'dependencies', 'prefixItems', 'items']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Works out what checking values against `schema` may cost, or refuses it.
 * @throws {SchemaRefusedError} naming where in the schema and the limit it passed, e.g.
 *   `at "/$defs/n/anyOf/0/$ref": "$ref" cycle through "anyOf" …; Loom refuses schemas whose checks
 *   of one value against one subschema exceed 64`.
 */
export function measureSchema(schema: Readonly<Record<string, unknown>>, dialect: SchemaDialect): SchemaBounds {
  return new SchemaAnalysis(schema, dialect).run();
}

class SchemaAnalysis {
  readonly #root: Readonly<Record<string, unknown>>;
  readonly #dialect: SchemaDialect;
  readonly #nodes: SchemaNode[] = [];
  readonly #byPointer = new Map<string, number>();
  readonly #references: PendingReference[] = [];
  #comparesItems = false;
  #matchesPatterns = false;
  #steps = 0;

  constructor(root: Readonly<Record<string, unknown>>, dialect: SchemaDialect) {
    this.#root = root;
    this.#dialect = dialect;
  }

  run(): SchemaBounds {
    const root = this.#walk(this.#root, '', 0) as number;
    // A reference may lead to a part of the schema the walk did not take for a schema (under a
    // keyword Ajv does not know); that part is walked then, and its own references resolved.
    for (let index = 0; index < this.#references.length; index += 1) {
      const { node, at, reference } = this.#references[index] as PendingReference;
      (this.#nodes[node] as SchemaNode).same.push({ via: at, target: this.#resolve(reference, at) });
    }
    const reachable = this.#reachableFrom(root);
    const order = this.#sameOrder(reachable);
    const closures = this.#closures(order);
    const checksPerValue = this.#explore(root, closures, order, reachable);
    return { checksPerValue, comparesItems: this.#comparesItems, matchesPatterns: this.#matchesPatterns };
  }

  #spend(steps: number): void {
    this.#steps += steps;
    if (this.#steps > MAX_SCHEMA_ANALYSIS_STEPS)
      throw new SchemaRefusedError('', 'too intricate for Loom to work out what checking a value against it costs', LIMITS.steps);
  }

  /** Adds the subschema at `pointer` (and everything below it) to the automaton; its node, or undefined for what is no schema. */
  #walk(value: unknown, pointer: string, depth: number): number | undefined {
    if (typeof value !== 'boolean' && !isObject(value)) return undefined;
    const known = this.#byPointer.get(pointer);
    if (known !== undefined) return known;
    if (depth > MAX_SCHEMA_DEPTH) throw new SchemaRefusedError(pointer, `a subschema nested ${depth} deep`, LIMITS.depth);
    if (this.#nodes.length >= MAX_SCHEMA_NODES) throw new SchemaRefusedError('', `more than ${MAX_SCHEMA_NODES} subschemas`, LIMITS.nodes);
    const node: SchemaNode = {
      pointer,
      same: [],
      properties: new Map(),
      otherProperties: [],
      anyProperty: [],
      names: [],
      tuple: [],
      restItems: [],
      anyItem: [],
    };
    const index = this.#nodes.length;
    this.#nodes.push(node);
    this.#byPointer.set(pointer, index);
    if (typeof value === 'boolean') return index;
    // `true` and `false` cost nothing to check and lead nowhere: no edge leads to them.
    const edge = (inner: unknown, at: string): Edge[] => {
      const target = this.#walk(inner, at, depth + 1);
      return target === undefined || typeof inner === 'boolean' ? [] : [{ via: at, target }];
    };
    for (const [key, inner] of Object.entries(value)) {
      const at = `${pointer}/${escapeToken(key)}`;
      if (SIDE_BY_SIDE.has(key)) {
        const count = Array.isArray(inner) ? inner.length : isObject(inner) ? Object.keys(inner).length : 0;
        if (count > MAX_SCHEMA_BRANCHES)
          throw new SchemaRefusedError(at, LIST_COMBINATORS.has(key) ? `${count} branches` : `${count} subschemas side by side`, LIMITS.branches(key));
      }
      if (LIST_COMBINATORS.has(key) && Array.isArray(inner)) {
        inner.forEach((branch: unknown, position) => node.same.push(...edge(branch, `${at}/${position}`)));
      } else if (ONE_SCHEMA_SAME.has(key)) {
        node.same.push(...edge(inner, at));
      } else if (key === '$ref') {
        if (typeof inner === 'string') this.#references.push({ node: index, at, reference: inner });
      } else if (key === '$dynamicRef' || key === '$recursiveRef') {
        throw new SchemaRefusedError(at, `a "${key}", which Loom does not follow`, LIMITS.references);
      } else if (key === '$id') {
        if (pointer !== '' && typeof inner === 'string')
          throw new SchemaRefusedError(at, 'a "$id" below the root, which makes references inside it resolve elsewhere', LIMITS.references);
      } else if (key === 'properties' && isObject(inner)) {
        for (const [name, property] of Object.entries(inner))
          node.properties.set(name, [...(node.properties.get(name) ?? []), ...edge(property, `${at}/${escapeToken(name)}`)]);
      } else if (key === 'patternProperties' && isObject(inner)) {
        this.#matchesPatterns ||= Object.keys(inner).length > 0;
        for (const [pattern, property] of Object.entries(inner)) node.anyProperty.push(...edge(property, `${at}/${escapeToken(pattern)}`));
      } else if (key === 'additionalProperties') {
        node.otherProperties.push(...edge(inner, at));
      } else if (key === 'unevaluatedProperties') {
        node.anyProperty.push(...edge(inner, at));
      } else if (key === 'propertyNames') {
        node.names.push(...edge(inner, at));
      } else if ((key === 'dependentSchemas' || key === 'dependencies') && isObject(inner)) {
        // `dependencies` also takes arrays of names (draft-07), which are no schemas.
        for (const [name, dependent] of Object.entries(inner)) node.same.push(...edge(dependent, `${at}/${escapeToken(name)}`));
      } else if (DEFINITIONS.has(key) && isObject(inner)) {
        for (const [name, definition] of Object.entries(inner)) this.#walk(definition, `${at}/${escapeToken(name)}`, depth + 1);
      } else if ((key === 'prefixItems' || key === 'items') && Array.isArray(inner)) {
        inner.forEach((item: unknown, position) => {
          node.tuple[position] = [...(node.tuple[position] ?? []), ...edge(item, `${at}/${position}`)];
        });
      } else if (key === 'items') {
        // In 2020-12 `items` takes the items past `prefixItems`; in draft-07 every item.
        (this.#dialect === '2020-12' && Array.isArray(value['prefixItems']) ? node.restItems : node.anyItem).push(...edge(inner, at));
      } else if (key === 'additionalItems') {
        (Array.isArray(value['items']) ? node.restItems : node.anyItem).push(...edge(inner, at));
      } else if (key === 'contains' || key === 'unevaluatedItems') {
        node.anyItem.push(...edge(inner, at));
      } else if (key === 'pattern') {
        this.#matchesPatterns = true;
      } else if (key === 'uniqueItems') {
        this.#comparesItems ||= inner === true;
      }
    }
    for (let position = 0; position < node.tuple.length; position += 1) node.tuple[position] ??= [];
    return index;
  }

  /** The node a `$ref` leads to: only into this schema, by JSON pointer, as Ajv resolves it. */
  #resolve(reference: string, at: string): number {
    const hash = reference.indexOf('#');
    const document = hash === -1 ? reference : reference.slice(0, hash);
    const fragment = hash === -1 ? '' : reference.slice(hash + 1);
    if (document !== '' && !this.#isRootDocument(document))
      throw new SchemaRefusedError(at, `"$ref" to ${JSON.stringify(reference)}, outside the schema`, LIMITS.references);
    if (fragment !== '' && !fragment.startsWith('/')) throw new SchemaRefusedError(at, `"$ref" to the anchor ${JSON.stringify(reference)}`, LIMITS.references);
    let tokens: string[];
    try {
      tokens =
        fragment === ''
          ? []
          : decodeURIComponent(fragment)
              .slice(1)
              .split('/')
              .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
    } catch {
      throw new SchemaRefusedError(at, `"$ref" ${JSON.stringify(reference)} is not a JSON pointer`, LIMITS.references);
    }
    let value: unknown = this.#root;
    let pointer = '';
    for (const token of tokens) {
      if (pointer !== '' && isObject(value) && typeof value['$id'] === 'string')
        throw new SchemaRefusedError(at, `"$ref" ${JSON.stringify(reference)} passes through a "$id"`, LIMITS.references);
      value = Array.isArray(value)
        ? /^(0|[1-9]\d*)$/.test(token)
          ? value[Number(token)]
          : undefined
        : isObject(value) && Object.hasOwn(value, token)
          ? value[token]
          : undefined;
      pointer = `${pointer}/${escapeToken(token)}`;
    }
    const target = this.#walk(value, pointer, 0);
    if (target === undefined) throw new SchemaRefusedError(at, `"$ref" ${JSON.stringify(reference)} points at no schema`, LIMITS.references);
    return target;
  }

  /** Whether `document` (a `$ref`'s part before `#`) names this schema, by its `$id`. */
  #isRootDocument(document: string): boolean {
    const id = this.#root['$id'];
    if (typeof id !== 'string') return false;
    try {
      const base = new URL(id);
      base.hash = '';
      const named = new URL(document, base);
      named.hash = '';
      return named.href === base.href;
    } catch {
      return false;
    }
  }

  /** The nodes a value checked against `root` can meet: only these cost anything (Ajv compiles nothing else). */
  #reachableFrom(root: number): number[] {
    const seen = new Set([root]);
    const pending = [root];
    for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
      for (const { target } of edgesOf(this.#nodes[node] as SchemaNode)) {
        if (!seen.has(target)) {
          seen.add(target);
          pending.push(target);
        }
      }
    }
    return [...seen];
  }

  /**
   * The reachable nodes with every node after those it applies to the same value (a post-order
   * of the `same` edges). A cycle of them is refused: Ajv would check the value against it forever.
   */
  #sameOrder(reachable: readonly number[]): number[] {
    const state = new Map<number, 'open' | 'done'>();
    const order: number[] = [];
    for (const start of reachable) {
      if (state.has(start)) continue;
      const stack: { node: number; next: number }[] = [{ node: start, next: 0 }];
      state.set(start, 'open');
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as { node: number; next: number };
        const edges = (this.#nodes[top.node] as SchemaNode).same;
        const edge = edges[top.next];
        if (edge === undefined) {
          state.set(top.node, 'done');
          order.push(top.node);
          stack.pop();
          continue;
        }
        top.next += 1;
        this.#spend(1);
        const seen = state.get(edge.target);
        if (seen === 'open') {
          const from = stack.findIndex((frame) => frame.node === edge.target);
          const cycle = [
            ...stack.slice(from).map((frame) => (this.#nodes[frame.node] as SchemaNode).pointer),
            (this.#nodes[edge.target] as SchemaNode).pointer,
          ];
          throw new SchemaRefusedError(
            edge.via,
            `"$ref" cycle that never moves into a part of the value (${cycle.map((pointer) => JSON.stringify(pointer)).join(' → ')}): a value would be checked against it without end`,
            LIMITS.sameCycle,
          );
        }
        if (seen === undefined) {
          state.set(edge.target, 'open');
          stack.push({ node: edge.target, next: 0 });
        }
      }
    }
    return order;
  }

  /**
   * Every reachable node's closure: the subschemas a value checked against it is checked against,
   * with how many times (itself once). Counts stop at {@link SATURATED}; a closure of more than
   * {@link MAX_SCHEMA_CHECKS} subschemas is left at that (checking against it is refused anyway).
   */
  #closures(order: readonly number[]): Map<number, Map<number, number>> {
    const closures = new Map<number, Map<number, number>>();
    for (const node of order) {
      const closure = new Map<number, number>([[node, 1]]);
      for (const { target } of (this.#nodes[node] as SchemaNode).same) {
        if (closure.size > MAX_SCHEMA_CHECKS) break;
        const inner = closures.get(target) as Map<number, number>;
        this.#spend(inner.size);
        for (const [reached, count] of inner) closure.set(reached, Math.min(SATURATED, (closure.get(reached) ?? 0) + count));
      }
      closures.set(node, closure);
    }
    return closures;
  }

  /**
   * The parts of a value checked against `vector` that lead somewhere different, each with the
   * subschemas it is checked against next (before their closures): every property one of them
   * names, one for any other property, every tuple place, one for any other item, a property's name.
   */
  #partsOf(vector: ReadonlyMap<number, number>): { label: Label; entries: Map<number, number> }[] {
    this.#spend(STATE_COST);
    if (![...vector.keys()].some((node) => edgesOf(this.#nodes[node] as SchemaNode).length > (this.#nodes[node] as SchemaNode).same.length)) return [];
    const named = new Map<string, number[]>();
    const others: number[] = [];
    const anyProperty = new Map<number, number>();
    const itemHolders: number[] = [];
    const anyItem = new Map<number, number>();
    const names = new Map<number, number>();
    let tuple = 0;
    const add = (entries: Map<number, number>, edges: readonly Edge[], count: number): void => {
      this.#spend(edges.length + 1);
      for (const { target } of edges) entries.set(target, Math.min(SATURATED, (entries.get(target) ?? 0) + count));
    };
    for (const [node, count] of vector) {
      const schema = this.#nodes[node] as SchemaNode;
      this.#spend(schema.properties.size + 1);
      for (const name of schema.properties.keys()) named.set(name, [...(named.get(name) ?? []), node]);
      if (schema.otherProperties.length > 0) others.push(node);
      add(anyProperty, schema.anyProperty, count);
      if (schema.tuple.length > 0 || schema.restItems.length > 0) itemHolders.push(node);
      tuple = Math.max(tuple, schema.tuple.length);
      add(anyItem, schema.anyItem, count);
      add(names, schema.names, count);
    }
    const steps: { label: Label; entries: Map<number, number> }[] = [];
    const property = (name: string | undefined): void => {
      const entries = new Map(anyProperty);
      for (const node of name === undefined ? [] : (named.get(name) ?? []))
        add(entries, (this.#nodes[node] as SchemaNode).properties.get(name as string) as Edge[], vector.get(node) as number);
      for (const node of others)
        if (name === undefined || !(this.#nodes[node] as SchemaNode).properties.has(name))
          add(entries, (this.#nodes[node] as SchemaNode).otherProperties, vector.get(node) as number);
      if (entries.size > 0) steps.push({ label: { kind: 'property', name }, entries });
    };
    for (const name of named.keys()) property(name);
    property(undefined);
    const item = (index: number | undefined): void => {
      const entries = new Map(anyItem);
      for (const node of itemHolders) {
        const schema = this.#nodes[node] as SchemaNode;
        add(entries, index !== undefined && index < schema.tuple.length ? (schema.tuple[index] as Edge[]) : schema.restItems, vector.get(node) as number);
      }
      if (entries.size > 0) steps.push({ label: { kind: 'item', index }, entries });
    };
    for (let index = 0; index < tuple; index += 1) item(index);
    item(undefined);
    if (names.size > 0) steps.push({ label: { kind: 'name' }, entries: names });
    return steps;
  }

  /**
   * Works out every set of subschemas (with counts) a part of a value can be checked against,
   * from the root down, each set once; refuses the schema when one passes a limit. Returns the
   * largest total count.
   */
  #explore(root: number, closures: ReadonlyMap<number, Map<number, number>>, order: readonly number[], reachable: readonly number[]): number {
    interface State {
      vector: Map<number, number>;
      entries: Map<number, number>;
      parent: State | undefined;
      label: Label | undefined;
    }
    const keyOf = (vector: ReadonlyMap<number, number>): string =>
      [...vector]
        .sort(([a], [b]) => a - b)
        .map(([node, count]) => `${node}:${count}`)
        .join(',');
    const expand = (entries: ReadonlyMap<number, number>): Map<number, number> => {
      const vector = new Map<number, number>();
      for (const [entry, times] of entries) {
        const closure = closures.get(entry) as Map<number, number>;
        this.#spend(closure.size);
        for (const [node, count] of closure) vector.set(node, Math.min(SATURATED, (vector.get(node) ?? 0) + times * count));
      }
      return vector;
    };
    const check = (state: State): number => {
      let total = 0;
      let most: [number, number] = [root, 0];
      for (const [node, count] of state.vector) {
        total = Math.min(SATURATED, total + count);
        if (count > most[1]) most = [node, count];
      }
      if (most[1] > MAX_SCHEMA_REPEATS) throw repeatsRefusal(this.#nodes, { labels: labelsTo(state), root, target: most[0], count: most[1], order, reachable });
      const overflowing = [...state.entries.keys()].find((entry) => (closures.get(entry) as Map<number, number>).size > MAX_SCHEMA_CHECKS);
      if (total > MAX_SCHEMA_CHECKS || overflowing !== undefined) {
        const heaviest =
          overflowing ??
          [...state.entries.keys()].reduce((a, b) => ((closures.get(a) as Map<number, number>).size >= (closures.get(b) as Map<number, number>).size ? a : b));
        const where = pathOf(state);
        throw new SchemaRefusedError(
          (this.#nodes[heaviest] as SchemaNode).pointer,
          `${where === '' ? 'the value itself' : `a part of the value (${JSON.stringify(where)})`} would be checked against ${total >= SATURATED ? `more than ${MAX_SCHEMA_CHECKS}` : total} subschemas, counted as often as they are reached`,
          LIMITS.checks,
        );
      }
      return total;
    };
    const start: State = { vector: new Map(), entries: new Map([[root, 1]]), parent: undefined, label: undefined };
    start.vector = expand(start.entries);
    let checksPerValue = check(start);
    const seen = new Set([keyOf(start.vector)]);
    const pending: State[] = [start];
    for (let at = 0; at < pending.length; at += 1) {
      const state = pending[at] as State;
      if (state.label?.kind === 'name') continue; // a name is a string: nothing below it
      for (const { label, entries } of this.#partsOf(state.vector)) {
        const next: State = { vector: expand(entries), entries, parent: state, label };
        const key = keyOf(next.vector);
        this.#spend(next.vector.size);
        if (seen.has(key)) continue;
        seen.add(key);
        checksPerValue = Math.max(checksPerValue, check(next));
        pending.push(next);
      }
    }
    return checksPerValue;
  }
}

interface LabelledState {
  parent: LabelledState | undefined;
  label: Label | undefined;
}

/** The steps from the root's state to `state`. */
function labelsTo(state: LabelledState): Label[] {
  const labels: Label[] = [];
  for (let at: LabelledState | undefined = state; at?.label !== undefined; at = at.parent) labels.unshift(at.label);
  return labels;
}

/** Where in a value the steps to `state` lead. */
function pathOf(state: LabelledState): string {
  return describePath(labelsTo(state));
}
