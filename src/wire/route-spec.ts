/**
 * What one route of Loom's HTTP API is, as data: its method and path, what it takes (path and
 * query parameters, headers, a body with its zod schema) and what it answers (a status, a media
 * type, a JSON schema for the document, and the view's type for a client). routes.ts lists them.
 */
import type { z } from 'zod';

/** A JSON Schema fragment as the OpenAPI document holds it. */
export type JsonSchema = { readonly [key: string]: JsonSchemaValue };
type JsonSchemaValue = string | number | boolean | null | readonly JsonSchemaValue[] | JsonSchema;

/** The methods Loom's routes answer. */
export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** The groups of the OpenAPI document, in its order, with what each holds. */
export const API_TAGS = {
  system: 'health, this document, the cluster',
  agents: 'spawn, inspect, steer and talk to agents',
  usage: 'tokens and cost',
  events: 'the live event stream and the audit log',
  approvals: 'tool calls and questions waiting for a person',
  'forged tools': 'tools agents built at run time',
  packages: 'agent packages and their runs',
  channels: 'chat platforms and webhooks',
  mcp: 'MCP servers Loom uses, and Loom as an MCP server',
  a2a: "Loom's agents over A2A, and agents elsewhere",
  openai: 'the OpenAI-compatible endpoint',
} as const;

/** One of {@link API_TAGS}. */
export type ApiTag = keyof typeof API_TAGS;

/** The error statuses a route may answer with (each described once in the document). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 415 | 422 | 429 | 502 | 504;

/** A path or query parameter: what it means, and its JSON schema when it is not any string. */
export interface Param {
  description: string;
  schema?: JsonSchema;
}

/**
 * A route's query: the zod schema the route validates it with (the document's types and a
 * client's come from it) and what each parameter means, or, for a route whose query is read by
 * another library (the MCP SDK), the descriptions alone.
 */
export interface QuerySpec {
  schema?: z.ZodObject;
  params: Readonly<Record<string, Param>>;
}

/**
 * A query of `schema`, each of its parameters described (the type leaves none out and adds none).
 * Its `schema` is typed `S` alone (not `z.ZodObject & S`, whose input takes any key), so a client's query is checked by it.
 */
export const queryOf = <S extends z.ZodObject>(
  schema: S,
  params: { readonly [K in keyof S['shape']]-?: string },
): { schema: S; params: QuerySpec['params'] } => ({
  schema,
  params: Object.fromEntries(Object.entries(params).map(([name, description]) => [name, { description }])),
});

/** The request headers a route reads besides the key. */
export type ApiHeader = 'Idempotency-Key' | 'Last-Event-ID';

/**
 * A request body: a zod schema of src/wire (validated by the route, described by the document,
 * typing a client's body), a schema defined elsewhere by its component `name` (the manifest, the
 * OpenAI-compatible request), or a plain JSON schema (`json`) for the protocols' own bodies.
 */
export interface RequestBody {
  /** Its component in the document. */
  name?: string;
  schema?: z.ZodType;
  json?: JsonSchema;
  /** False: the body may be left out. */
  required: boolean;
  /** `manifest`: TOML or JSON; `a2a`: A2A's media type or JSON; JSON otherwise. */
  media?: 'manifest' | 'a2a';
}

/** How an answer's body is sent. */
export type AnswerContent = 'json' | 'sse' | 'json-or-sse' | 'text' | 'yaml' | 'none';

/** A route's answer on success; `T`, the view's type, lives in the type only (for clients). */
export interface Answer<T> {
  status: 200 | 201 | 202 | 204;
  description: string;
  content: AnswerContent;
  /** The body's JSON schema for the document (`{ type: 'object' }` when left out). */
  schema?: JsonSchema;
  /** Never set: carries `T`. */
  readonly view?: T;
}

/** One route. */
export interface ApiRoute {
  method: HttpMethod;
  /** OpenAPI style: `/api/agents/{agent}`. */
  path: string;
  tag: ApiTag;
  summary: string;
  description?: string;
  params?: Readonly<Record<string, Param>>;
  query?: QuerySpec;
  headers?: readonly ApiHeader[];
  body?: RequestBody;
  answer: Answer<unknown>;
  errors?: readonly ErrorStatus[];
  /** Answered without a key when keys are configured. */
  public?: boolean;
}

/** A JSON answer of type `T`. */
export function json<T = unknown>(description: string, schema?: JsonSchema, status: 200 | 201 = 200): Answer<T> {
  return { status, description, content: 'json', ...(schema === undefined ? {} : { schema }) };
}

/** An answer of another kind than one JSON view (a stream, text, nothing). */
export function other<T = unknown>(content: Exclude<AnswerContent, 'json'>, description: string, status: Answer<T>['status'] = 200): Answer<T> {
  return { status, description, content };
}

/** A reference to a component schema of the document. */
export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** An array of `items`. */
export const arrayOf = (items: JsonSchema = { type: 'object' }): JsonSchema => ({ type: 'array', items });

/** A body of a zod schema, listed in the document as the component `name`. */
export const bodyOf = <S extends z.ZodType>(name: string, schema: S, required = true): RequestBody & { schema: S } => ({ name, schema, required });

/** The path parameters of route `R`, each a string. */
export type ParamsOf<R> = R extends { params: infer P } ? { [K in keyof P]: string } : Record<never, string>;

/** The query parameters of route `R`, each optional; none for a route without a query. */
export type QueryOf<R> = R extends { query: { schema: infer S extends z.ZodType } }
  ? z.input<S>
  : R extends { query: { params: infer Q } }
    ? { [K in keyof Q]?: string | undefined }
    : Record<string, never>;

/** The body route `R` reads, as a client writes it: its zod schema's input; unknown for a schema defined elsewhere. */
export type BodyOf<R> = R extends { body: { schema: infer S extends z.ZodType } } ? z.input<S> : R extends { body: RequestBody } ? unknown : never;

/** The view route `R` answers with. */
export type AnswerOf<R> = R extends { answer: Answer<infer T> } ? T : never;
