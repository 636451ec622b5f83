/** Turning zod validation failures into messages that name the field and what was expected. */
export { describeValue, formatIssue, formatIssues, formatPath } from './format-issue.ts';
export type { FormatIssueOptions, PathStyle } from './format-issue.ts';
export { objectKeysAt } from './schema-keys.ts';
export { safeParseJson } from './safe-parse-json.ts';
export { safeDecodeUriComponent, trimTrailingSlashes } from './safe-decode-uri.ts';
export { jsonDepthProblem, jsonTextDepth, MAX_JSON_DEPTH, measureJsonValue, tooDeepMessage } from './json-depth.ts';
export { compileJsonSchema, measureJsonSchema } from './json-schema.ts';
export { MAX_CHECK_WORK } from './ajv-check.ts';
export { MAX_CHECK_MS } from './schema-check-thread.ts';
export { MAX_SCHEMA_BRANCHES, MAX_SCHEMA_CHECKS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MAX_SCHEMA_REPEATS } from './schema-limits.ts';
export { SchemaRefusedError } from './schema-refused-error.ts';
export { boundedSchemaValidator } from './bounded-schema-validator.ts';
export type { SchemaCheck, SchemaDialect } from './json-schema.ts';
export { yamlLibrary } from './yaml.ts';
export { jsoncLibrary } from './jsonc.ts';
