import { LoomError } from '../errors/index.ts';

/**
 * A JSON Schema Loom will not check values against: it passes one of the limits of
 * `measureJsonSchema` (src/validation/schema-bounds.ts), which keep the work of checking a value
 * bounded. The message names where in the schema (`at "/properties/a/anyOf/0/$ref": …`) and the
 * limit (`…; Loom refuses schemas whose … exceeds 64`).
 */
export class SchemaRefusedError extends LoomError {
  /** Where in the schema, as a JSON pointer (`""` for the whole schema). */
  readonly pointer: string;

  constructor(pointer: string, reason: string, limit: string) {
    super('SCHEMA_REFUSED', 'third-party', `at ${JSON.stringify(pointer)}: ${reason}; ${limit}`, { details: { pointer, reason, limit } });
    this.pointer = pointer;
  }
}
