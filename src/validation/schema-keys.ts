import type { z } from 'zod';

interface DefinitionLike {
  type: string;
  innerType?: SchemaLike;
  in?: SchemaLike;
  element?: SchemaLike;
  valueType?: SchemaLike;
  shape?: Record<string, SchemaLike>;
}

interface SchemaLike {
  _zod: { def: DefinitionLike };
}

/** Looks through wrappers (optional, default, pipe, …) to the schema that shapes the value. */
function unwrap(schema: SchemaLike): SchemaLike {
  let current = schema;
  for (let depth = 0; depth < 16; depth += 1) {
    const definition = current._zod.def;
    const inner = definition.innerType ?? (definition.type === 'pipe' ? definition.in : undefined);
    if (inner === undefined) return current;
    current = inner;
  }
  return current;
}

/**
 * The keys an object schema accepts at `path` inside `schema`, or undefined where the path
 * does not lead to an object. Used for "did you mean" hints; reads zod's definitions.
 */
export function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let current: SchemaLike | undefined = unwrap(schema);
  for (const segment of path) {
    const definition: DefinitionLike = current._zod.def;
    if (definition.type === 'object' && typeof segment === 'string') current = definition.shape?.[segment];
    else if (definition.type === 'record') current = definition.valueType;
    else if (definition.type === 'array' && typeof segment === 'number') current = definition.element;
    else return undefined;
    if (current === undefined) return undefined;
    current = unwrap(current);
  }
  const shape = current._zod.def.type === 'object' ? current._zod.def.shape : undefined;
  return shape === undefined ? undefined : Object.keys(shape);
}
