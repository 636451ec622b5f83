import type { z } from 'zod';
import type { ManifestFormat } from '../manifest/index.ts';
import { formatIssues, jsonTextDepth, MAX_JSON_DEPTH, safeParseJson, tooDeepMessage } from '../validation/index.ts';
import type { HttpContext } from './http-context.ts';
import { HttpRequestError } from '../errors/index.ts';

/** The media type of a request (`application/json`), lower case, without parameters. */
export function mediaTypeOf(c: HttpContext): string {
  return (c.req.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** The media types a manifest is sent as, and its format in each. */
const MANIFEST_MEDIA_TYPES: ReadonlyMap<string, ManifestFormat> = new Map([
  ['application/toml', 'toml'],
  ['application/x-toml', 'toml'],
  ['application/json', 'json'],
]);

/** The manifest format a media type names, or undefined for any other type (a Map: a type such as `constructor` names none). */
export function manifestFormatOf(type: string): ManifestFormat | undefined {
  return MANIFEST_MEDIA_TYPES.get(type);
}

/**
 * Reads and validates a JSON request body.
 * @throws {HttpRequestError} `UNSUPPORTED_MEDIA_TYPE` unless the body is `application/json`;
 *   `INVALID_REQUEST` for malformed JSON (naming the parser's position), JSON nested deeper than
 *   `MAX_JSON_DEPTH` (measured on the text, before anything recursive walks it), or a body the
 *   schema refuses (naming the field).
 */
export async function readJsonBody<T extends z.ZodType>(c: HttpContext, schema: T): Promise<z.output<T>> {
  const type = mediaTypeOf(c);
  if (type !== 'application/json') {
    throw new HttpRequestError('UNSUPPORTED_MEDIA_TYPE', `cannot read the request body: expected Content-Type "application/json", got "${type || 'none'}"`);
  }
  const text = await c.req.text();
  if (jsonTextDepth(text) > MAX_JSON_DEPTH) throw new HttpRequestError('INVALID_REQUEST', `cannot read the request body: ${tooDeepMessage('it')}`);
  const parsed = safeParseJson(text);
  if (!parsed.ok) throw new HttpRequestError('INVALID_REQUEST', `cannot read the request body: malformed JSON: ${parsed.message}`);
  return validate(schema, parsed.value, 'request body');
}

/**
 * Validates a request's query parameters.
 * @throws {HttpRequestError} `INVALID_REQUEST` naming the parameter.
 */
export function readQuery<T extends z.ZodType>(c: HttpContext, schema: T): z.output<T> {
  return validate(schema, c.req.query(), 'query');
}

function validate<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) throw new HttpRequestError('INVALID_REQUEST', `invalid ${what}: ${formatIssues(result.error, { style: 'json' }).join('; ')}`);
  return result.data;
}

/** `value` without its undefined properties (for options under `exactOptionalPropertyTypes`). */
export function withoutUndefined<T extends Record<string, unknown>>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}
