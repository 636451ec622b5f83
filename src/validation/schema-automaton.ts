/**
 * A JSON Schema read as an automaton over the paths of a value (see schema-bounds.ts): each
 * subschema a state, with edges to the subschemas it applies to the same value and to its parts.
 */

/** An edge of the automaton: the keyword that makes it, the pointer of the schema it leads to (of the `$ref` for a reference), its target. */
export interface Edge {
  via: string;
  target: number;
}

/** One subschema: the schemas it applies to the same value, and those it applies to the value's parts. */
export interface SchemaNode {
  pointer: string;
  /** allOf, anyOf, oneOf, not, if, then, else, $ref, dependentSchemas, dependencies. */
  same: Edge[];
  /** properties/<name>. */
  properties: Map<string, Edge[]>;
  /** additionalProperties: the properties its own `properties` do not name. */
  otherProperties: Edge[];
  /** patternProperties, unevaluatedProperties: any property (Loom runs no pattern to narrow it). */
  anyProperty: Edge[];
  /** propertyNames: a property's name, a string (nothing below it). */
  names: Edge[];
  /** prefixItems/<i>, items/<i> (the draft-07 tuple). */
  tuple: Edge[][];
  /** The items past the tuple: items (2020-12, after prefixItems), additionalItems. */
  restItems: Edge[];
  /** Any item: items (as one schema), contains, unevaluatedItems. */
  anyItem: Edge[];
  /** Every edge above, once the walk is done. */
  all?: Edge[];
}

/** A step into a part of a value: a named property, any other property, an item, a property's name. */
export type Label = { kind: 'property'; name: string | undefined } | { kind: 'item'; index: number | undefined } | { kind: 'name' };

export const escapeToken = (token: string): string => token.replaceAll('~', '~0').replaceAll('/', '~1');

/** Every edge of `node` (kept on it once the walk is done). */
export function edgesOf(node: SchemaNode): Edge[] {
  node.all ??= [
    ...node.same,
    ...[...node.properties.values()].flat(),
    ...node.otherProperties,
    ...node.anyProperty,
    ...node.names,
    ...node.tuple.flat(),
    ...node.restItems,
    ...node.anyItem,
  ];
  return node.all;
}

/** The edges of `node` a part of the value reached by `label` takes. */
export function descend(node: SchemaNode, label: Label): Edge[] {
  switch (label.kind) {
    case 'property': {
      const named = label.name === undefined ? undefined : node.properties.get(label.name);
      return [...(named ?? node.otherProperties), ...node.anyProperty];
    }
    case 'item': {
      const inTuple = label.index !== undefined && label.index < node.tuple.length;
      return [...(inTuple ? (node.tuple[label.index as number] as Edge[]) : node.restItems), ...node.anyItem];
    }
    case 'name':
      return node.names;
  }
}

/** A step as a JSON pointer token: the property or item, `*` for any other, `(name)` for a property's name. */
function labelToken(label: Label): string {
  switch (label.kind) {
    case 'property':
      return `/${label.name === undefined ? '*' : escapeToken(label.name)}`;
    case 'item':
      return `/${label.index === undefined ? '*' : label.index}`;
    case 'name':
      return '/(name)';
  }
}

/** Where in a value `labels` lead, as a JSON pointer (its first levels only, past eight). */
export function describePath(labels: readonly Label[]): string {
  const shown = labels.slice(0, 8).map(labelToken).join('');
  return labels.length > 8 ? `${shown}/…` : shown;
}
