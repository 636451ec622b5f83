import { describe, expect, it } from 'vitest';
import { LOOM_VERSION } from '../../src/cli/index.ts';
import { type OpenApiDocument, openApiDocument } from '../../src/http/openapi-routes.ts';
import type { FixedSegmentsHandler } from '../../src/http/fixed-segments.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useDaemonHome } from '../support/daemon-process.ts';
import { openTestHost, TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

/** Whether the daemon's app mounts the document's route yet (src/http/create-http-app.ts). */

/** A value for each path parameter: a real agent where the request leaves it be, names that exist nowhere where it would destroy. */
function concrete(path: string, method: string): string {
  const agent = method === 'delete' ? 'no-such-agent' : 'helper';
  const values: Record<string, string> = {
    agent,
    id: 'no-such-id',
    slug: 'no-such-package',
    binding: 'none',
    code: 'NOCODE',
    channel: 'no-such-channel',
    name: 'no-such-server',
    action: 'approve',
  };
  return path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? name);
}

/** Every `$ref` in `value`. */
function refs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === '$ref' && typeof inner === 'string' ? [inner] : refs(inner)));
}

describe('the OpenAPI document of the HTTP API', () => {
  const document: OpenApiDocument = openApiDocument({ version: LOOM_VERSION });
  const daemon = useDaemonHome('loom-openapi-');

  it('is OpenAPI 3.1 whose references resolve and whose path parameters are declared', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe(LOOM_VERSION);
    for (const reference of refs(document)) {
      const [, section, name] = /^#\/components\/(\w+)\/(\w+)$/.exec(reference) ?? [];
      const components = document.components as unknown as Record<string, Record<string, unknown>>;
      expect(components[section ?? '']?.[name ?? ''], reference).toBeDefined();
    }
    for (const [path, methods] of Object.entries(document.paths)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      for (const [method, operation] of Object.entries(methods)) {
        const declared = ((operation['parameters'] ?? []) as { name: string; in: string }[])
          .filter((parameter) => parameter.in === 'path')
          .map((parameter) => parameter.name);
        expect(declared.sort(), `${method.toUpperCase()} ${path}`).toEqual([...names].sort());
      }
    }
    // The manifest body is the manifest schema itself.
    expect(Object.keys((document.components.schemas['Manifest']?.['properties'] ?? {}) as object)).toEqual(
      expect.arrayContaining(['name', 'model', 'capabilities', 'schedule']),
    );
  });

  it('lists every route the HTTP app registers (a route added without an entry fails here)', async () => {
    const dir = await makeTempDir('loom-openapi-routes-');
    const host = await openTestHost(dir.path);
    try {
      const app = createHttpApp({
        kernel: host.kernel,
        config: ConfigSchema.parse({}),
        env: TEST_KEYS,
        clock: host.clock,
        logger: createSilentLogger(),
        packages: host.packages,
        channels: host.channels,
        cluster: host.cluster,
      });
      // Hono's own list: middleware and the A2A app's catch-alls are `*` paths; a route of every method is ALL.
      const registered = app.routes
        // `/a2a` alone is where the A2A app is mounted: its own routes are listed under it.
        .filter((route) => !route.path.includes('*') && !route.path.endsWith('/') && route.path !== '/a2a')
        .flatMap((route) => {
          const method = route.method === 'ALL' ? 'get' : route.method.toLowerCase();
          const path = route.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}');
          // Fixed segments registered as one parameter, for Hono's RegExp router (fixed-segments.ts): each value is a route.
          const fixed = route.handler as Partial<FixedSegmentsHandler>;
          if (fixed.segments === undefined) return [{ method, path }];
          const routes = fixed.segments.map((segment) => ({ method, path: path.replace(/\{\w+\}$/, segment) }));
          return fixed.answersOthers === true ? [{ method, path }, ...routes] : routes;
        });
      expect(registered.length).toBeGreaterThan(40);
      const missing = registered
        .filter(({ method, path }) => document.paths[path]?.[method] === undefined)
        .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
      expect(missing).toEqual([]);
    } finally {
      await host.close();
      await dir.remove();
    }
  });

  it('lists only paths a real daemon answers (none is an unknown route)', async () => {
    const { url } = await daemon.start();
    const spawned = await fetch(`${url}/api/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/toml' },
      body: 'name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n',
    });
    expect(spawned.status).toBe(201);
    const unknown: string[] = [];
    let asked = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const method of Object.keys(methods)) {
        const abort = new AbortController();
        const withBody = method === 'post' || method === 'put';
        const response = await fetch(`${url}${concrete(path, method)}`, {
          method: method.toUpperCase(),
          signal: abort.signal,
          headers: withBody ? { 'content-type': 'application/json' } : {},
          ...(withBody ? { body: '{}' } : {}),
        });
        asked += 1;
        // Streams (the event log, MCP's) stay open: their status is all this needs.
        // The router's own answer for a path it has no route for ("no route POST /x; …", A2A's "no
        // A2A route POST /a2a/x"); a route's handler may answer 404 too (an unknown agent; a webhook
        // channel that is not configured).
        if (response.status === 404) {
          const answer = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
          if (answer.error?.code === 'ROUTE_NOT_FOUND' && /^no (A2A )?route /.test(answer.error.message ?? '')) unknown.push(`${method.toUpperCase()} ${path}`);
        }
        abort.abort();
      }
    }
    expect(asked).toBeGreaterThan(60);
    expect(unknown).toEqual([]);
  }, 60_000);

  it('tells an unknown route from a known one (the check above can fail)', async () => {
    const { url } = await daemon.start();
    const response = await fetch(`${url}/api/no-such-route`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'ROUTE_NOT_FOUND',
      message: expect.stringMatching(/^no route GET \/api\/no-such-route/) as unknown,
    });
  });

  it('lists A2A routes where a daemon serves them: under a changed [a2a].listen_path, and not at all with A2A off', async () => {
    const dir = await makeTempDir('loom-openapi-a2a-');
    const host = await openTestHost(dir.path);
    try {
      for (const a2a of [{ listen_path: '/peers' }, { enabled: false }]) {
        const app = createHttpApp({
          kernel: host.kernel,
          config: ConfigSchema.parse({ a2a }),
          env: TEST_KEYS,
          clock: host.clock,
          logger: createSilentLogger(),
          packages: host.packages,
          channels: host.channels,
          cluster: host.cluster,
        });
        const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
        try {
          const served = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as OpenApiDocument;
          const listed = Object.keys(served.paths);
          expect(listed.filter((path) => path.startsWith('/a2a'))).toEqual([]);
          const a2aPaths = listed.filter((path) => path.startsWith('/peers') || path.startsWith('/.well-known/agent'));
          expect(a2aPaths.length, JSON.stringify(a2a)).toBe(
            'listen_path' in a2a ? Object.keys(document.paths).filter((path) => path.startsWith('/a2a') || path.startsWith('/.well-known/agent')).length : 0,
          );
          const answer = async (path: string) => {
            const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
            return ((await response.json()) as { error?: { code: string } }).error?.code;
          };
          expect(await answer('/a2a/helper')).toBe('ROUTE_NOT_FOUND');
          if ('listen_path' in a2a) {
            expect(listed).toEqual(expect.arrayContaining(['/peers/{agent}', '/peers/agents', '/peers/tasks/send']));
            expect(await answer('/peers/helper')).toBe('AGENT_NOT_FOUND');
          }
        } finally {
          await server.close();
        }
      }
    } finally {
      await host.close();
      await dir.remove();
    }
  });

  it('is served by the daemon at GET /api/openapi.json', async () => {
    const { url } = await daemon.start();
    const response = await fetch(`${url}/api/openapi.json`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });
});
