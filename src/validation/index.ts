/** Turning zod validation failures into messages that name the field and what was expected. */
export { closestKey, describeValue, formatIssue, formatIssues, formatPath } from './format-issue.ts';
export type { FormatIssueOptions, PathStyle } from './format-issue.ts';
export { objectKeysAt } from './schema-keys.ts';
export { safeParseJson } from './safe-parse-json.ts';
export { safeDecodeUriComponent, trimTrailingSlashes } from './safe-decode-uri.ts';
export type { JsonParseResult } from './safe-parse-json.ts';
export { compileJsonSchema } from './json-schema.ts';
export type { SchemaCheck, SchemaDialect } from './json-schema.ts';
export { yamlLibrary } from './yaml.ts';
