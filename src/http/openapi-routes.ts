import { Hono } from 'hono';
import { z } from 'zod';
import { ManifestSchema } from '../manifest/index.ts';
import { API, API_TAGS, type ApiHeader, type ApiRoute, type Param, type RequestBody } from '../wire/index.ts';
import type { HttpEnv } from './http-context.ts';
import { ChatCompletionRequestSchema } from './openai/index.ts';

/** A JSON value as the document holds it. */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** An OpenAPI 3.1 document (the parts Loom's uses). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: JsonObject[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, JsonObject>>;
  components: { securitySchemes: JsonObject; schemas: Record<string, JsonObject>; responses: Record<string, JsonObject> };
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });

/**
 * A request body's schema from the route's own zod schema, as a client writes it, registered in
 * `schemas` under `name`; the definitions zod puts in `$defs` (a recursive JSON value) become
 * components of their own, `<name>_<definition>`.
 */
function registerSchema(schemas: Record<string, JsonObject>, name: string, schema: z.ZodType): JsonObject {
  const { $schema: _schema, $defs, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  const rename = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(rename);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        key === '$ref' && typeof inner === 'string' ? inner.replace(/^#\/\$defs\//, `#/components/schemas/${name}_`) : rename(inner),
      ]),
    );
  };
  for (const [key, definition] of Object.entries(($defs ?? {}) as JsonObject)) schemas[`${name}_${key}`] = rename(definition) as JsonObject;
  schemas[name] = rename(rest) as JsonObject;
  return ref(name);
}

const json = (schema: JsonObject): JsonObject => ({ 'application/json': { schema } });
const ok = (description: string, schema: JsonObject = { type: 'object' }): JsonObject => ({ description, content: json(schema) });

/** The request headers routes read, as the document describes them. */
const HEADERS: Record<ApiHeader, JsonObject> = {
  'Idempotency-Key': {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      "a key of the caller's (1 to 255 printable ASCII characters): the same message sent again with it gets the turn the first one started (its reply once it ends), for 24 hours after that turn ended",
    schema: { type: 'string', maxLength: 255 },
  },
  'Last-Event-ID': {
    name: 'Last-Event-ID',
    in: 'header',
    required: false,
    description: 'the id of the last event the client got (`<turn id>:<epoch>:<seq>`): the stream goes on after it',
    schema: { type: 'string', maxLength: 300 },
  },
};

/** A query parameter's JSON schema, from the zod schema the route validates the query with. */
function queryParameterSchema(schema: z.ZodObject, name: string): JsonObject {
  const field: z.ZodType | undefined = (schema.shape as Record<string, z.ZodType | undefined>)[name];
  if (field === undefined) throw new Error(`the route table describes the query parameter "${name}", which its schema does not take`);
  const { $schema: _schema, ...rest } = z.toJSONSchema(field, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  return rest;
}

/** A route's parameters: its path's, its query's (typed by its schema), then its headers. */
function parametersOf(route: ApiRoute): JsonObject[] {
  const parameter =
    (where: 'path' | 'query') =>
    ([name, param]: [string, Param]): JsonObject => {
      const schema =
        where === 'query' && route.query?.schema !== undefined
          ? queryParameterSchema(route.query.schema, name)
          : ((param.schema ?? { type: 'string' }) as JsonObject);
      return { name, in: where, required: where === 'path', description: param.description, schema };
    };
  return [
    ...Object.entries(route.params ?? {}).map(parameter('path')),
    ...Object.entries(route.query?.params ?? {}).map(parameter('query')),
    ...(route.headers ?? []).map((name) => HEADERS[name]),
  ];
}

/** A route's request body: its zod schema registered as a component, or the component it names, or its plain schema. */
function requestBodyOf(body: RequestBody, schemaOf: (name: string, schema?: z.ZodType) => JsonObject): JsonObject {
  const schema = body.json !== undefined ? (body.json as JsonObject) : schemaOf(body.name ?? 'Body', body.schema);
  const content: JsonObject =
    body.media === 'manifest'
      ? { 'application/json': { schema }, 'application/toml': { schema: { type: 'string' } } }
      : body.media === 'a2a'
        ? { 'application/a2a+json': { schema }, 'application/json': { schema } }
        : json(schema);
  return { required: body.required, content };
}

/** A route's answer on success, as the document's `responses` entry. */
function responseOf({ description, content, schema }: ApiRoute['answer']): JsonObject {
  const body = (schema ?? { type: 'object' }) as JsonObject;
  switch (content) {
    case 'json':
      return ok(description, body);
    case 'json-or-sse':
      return { description, content: { 'application/json': { schema: body }, 'text/event-stream': { schema: { type: 'string' } } } };
    case 'sse':
      return { description, content: { 'text/event-stream': { schema: { type: 'string' } } } };
    case 'text':
      return { description, content: { 'text/plain': { schema: { type: 'string' } } } };
    case 'yaml':
      return { description, content: { 'application/yaml': { schema: { type: 'string' } } } };
    case 'none':
      return { description };
  }
}

/** One operation of the document, from a route of the table. */
function operationOf(route: ApiRoute, schemaOf: (name: string, schema?: z.ZodType) => JsonObject): JsonObject {
  const parameters = parametersOf(route);
  return {
    tags: [route.tag],
    summary: route.summary,
    ...(route.description === undefined ? {} : { description: route.description }),
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(route.body === undefined ? {} : { requestBody: requestBodyOf(route.body, schemaOf) }),
    responses: {
      [String(route.answer.status)]: responseOf(route.answer),
      ...Object.fromEntries((route.errors ?? []).map((status) => [String(status), { $ref: `#/components/responses/Error${status}` }])),
    },
    ...(route.public === true ? { security: [] } : {}),
  };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'bad input: the message names the field',
  401: 'a missing or wrong key',
  403: 'refused: role, capability, or a non-loopback client',
  404: 'an unknown agent, resource or route',
  409: 'a conflict: a name taken, an agent suspended, no turn running',
  415: 'a body of a type the route does not read',
  422: "refused after checking (a forge's stage)",
  429: 'quota or rate limit; `Retry-After` says when',
  502: "every model failed, or a code agent's module failed",
  504: 'over `[daemon].request_timeout_seconds`',
};

/**
 * Where a daemon serves a route the document lists: A2A's under `[a2a].listen_path` (`a2aPath`;
 * `/` puts them at the root), none of them when A2A is off (`null`), as listed when not given.
 */
function servedPath(path: string, a2aPath: string | null | undefined): string | undefined {
  const isA2a = path === A2A_PATH || path.startsWith(`${A2A_PATH}/`);
  if (a2aPath === null && (isA2a || path.startsWith('/.well-known/agent'))) return undefined;
  if (a2aPath === undefined || a2aPath === null || !isA2a) return path;
  return `${a2aPath === '/' ? '' : a2aPath}${path.slice(A2A_PATH.length)}` || '/';
}

/** Where the document lists A2A's routes: `[a2a].listen_path`'s default. */
const A2A_PATH = '/a2a';

/**
 * Loom's HTTP API as an OpenAPI 3.1 document, generated from the route table (src/wire/routes.ts):
 * every route the daemon answers, with request bodies from the zod schemas the routes validate
 * with, and the manifest's from the manifest schema. Served
 * at `GET /api/openapi.json` and written to docs/reference/openapi.json. `a2aPath` is the
 * daemon's `[a2a].listen_path`, or null when `[a2a].enabled = false`: the served document lists
 * A2A's routes where that daemon answers them (docs/reference's, under `/a2a`).
 */
export function openApiDocument(options: { version: string; a2aPath?: string | null }): OpenApiDocument {
  const schemas: Record<string, JsonObject> = {};
  // The bodies defined outside src/wire (the manifest's schema, the OpenAI-compatible request), by the name the table gives them.
  const defined: Record<string, z.ZodType> = { Manifest: ManifestSchema, ChatCompletionRequest: ChatCompletionRequestSchema };
  const schemaOf = (name: string, schema?: z.ZodType): JsonObject => {
    if (schemas[name] !== undefined) return ref(name);
    const found = schema ?? defined[name];
    if (found === undefined) throw new Error(`the route table names the body "${name}", which has no schema`);
    return registerSchema(schemas, name, found);
  };
  schemaOf('Manifest');
  const paths: OpenApiDocument['paths'] = {};
  for (const route of Object.values(API) as ApiRoute[]) {
    const served = servedPath(route.path, options.a2aPath);
    if (served === undefined) continue;
    paths[served] = { ...paths[served], [route.method]: operationOf(route, schemaOf) };
  }
  const errorResponses = Object.fromEntries(Object.entries(STATUS_TEXT).map(([status, text]) => [`Error${status}`, ok(text, ref('Error'))]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Loom',
      version: options.version,
      description:
        'The HTTP API of a Loom daemon (`loom start`, by default at http://127.0.0.1:4200). With no API key configured, only clients on this machine are served, as the owner; with keys, every route but the public ones needs one, as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Errors are `{ "error": { "code", "message" } }`. Guide: docs/http-api.md.',
    },
    servers: [{ url: 'http://127.0.0.1:4200' }],
    // A key by either header; or none, when the daemon has no keys configured (loopback clients only).
    security: [{ bearer: [] }, { apiKey: [] }, {}],
    tags: Object.entries(API_TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: "an API key: `LOOM_API_KEY`, or a `[[auth.keys]]` entry's secret" },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'the same key in another header' },
      },
      schemas: {
        ...schemas,
        Agent: {
          type: 'object',
          description: 'An agent as `loom agent show --json` prints it.',
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            version: { type: 'string' },
            description: { type: 'string' },
            state: { type: 'string' },
            parent: { type: ['string', 'null'] },
            children: { type: 'array', items: { type: 'string' } },
            session_id: { type: 'string' },
            module: { type: 'string' },
            schedule: { type: 'string' },
            model: { type: ['string', 'null'], description: "what the manifest's `[model]` names; null on the daemon's default model" },
            runs_on: { type: ['string', 'null'], description: "its primary model: its own, else the daemon's default; null when it has neither" },
            tags: { type: 'array', items: { type: 'string' } },
            capabilities: { type: 'array', items: { type: 'object' } },
            created_at: { type: 'string' },
            updated_at: { type: 'string' },
            skills: {
              type: 'object',
              description:
                "one agent's view (spawn, update, show): what its manifest's `skills` offer it of the installed skills, in its prompt's order, and why a skill it names is not offered",
              properties: {
                skills: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      skill: { type: 'string', description: '`@org/skills/name@version`' },
                      name: { type: 'string' },
                      description: { type: 'string' },
                      in_prompt: { type: 'boolean', description: 'false: past the budget, listed by name and description only' },
                    },
                  },
                },
                problems: { type: 'array', items: { type: 'string' } },
                budget_bytes: { type: 'integer' },
              },
            },
          },
        },
        Reply: {
          type: 'object',
          properties: {
            text: { type: 'string' },
            usage: { type: 'object', properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } } },
            iterations: { type: 'integer' },
            cost_usd: { type: 'number' },
            model: { type: 'string' },
          },
        },
        Error: {
          type: 'object',
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
            },
          },
          required: ['error'],
        },
      },
      responses: errorResponses,
    },
  };
}

/**
 * `GET /api/openapi.json` (mount under `/api`): the document above. Any caller the API serves may
 * read it (owner, user or viewer key; the local user without keys): it describes routes, not data.
 */
export function createOpenApiRoutes(options: { version: string; a2aPath: string | null }): Hono<HttpEnv> {
  const routes = new Hono<HttpEnv>();
  let document: OpenApiDocument | undefined;
  routes.get('/openapi.json', (c) => c.json((document ??= openApiDocument(options))));
  return routes;
}
