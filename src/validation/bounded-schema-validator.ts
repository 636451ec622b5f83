import { compileJsonSchema } from './json-schema.ts';

/** What a validator provider answers (the shape of the MCP SDK's `JsonSchemaValidatorResult`). */
export type BoundedValidatorResult<T> = { valid: true; data: T; errorMessage: undefined } | { valid: false; data: undefined; errorMessage: string };

/**
 * A JSON Schema validator provider for libraries that take one (the MCP SDK client's
 * `jsonSchemaValidator`, which checks a tool's structured output against its `outputSchema`),
 * built on `compileJsonSchema`: the
 * schemas a server sends are measured before they compile, and each value is checked within
 * `MAX_CHECK_WORK`, as every schema Loom did not write is. The SDK's own validator checks with
 * Ajv's `allErrors` and no bound, on the daemon's main thread.
 * @throws {SchemaRefusedError} from `getValidator`, for a schema whose checks Loom cannot bound
 *   (the SDK reports it as the tool's error when it is called).
 */
export const boundedSchemaValidator = {
  getValidator<T>(schema: object): (input: unknown) => BoundedValidatorResult<T> {
    const check = compileJsonSchema(schema as Readonly<Record<string, unknown>>, { dialect: '2020-12', root: '(value)' });
    return (input) => {
      const problems = check(input);
      return problems === undefined ? { valid: true, data: input as T, errorMessage: undefined } : { valid: false, data: undefined, errorMessage: problems };
    };
  },
};
