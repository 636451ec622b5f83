import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { installedPath } from '../config/installation.ts';
import { safeDecodeUriComponent } from '../validation/index.ts';

/** Where `vite build web` (the `prepare` script) writes the dashboard. */
export const DASHBOARD_DIR = installedPath('web', 'dist') + sep;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * The Content-Security-Policy of every dashboard response. The built dashboard is one script and
 * one stylesheet from `/assets/`, talks only to its own origin, and has no inline script or
 * style (Preact sets styles through the CSSOM, which the policy allows), so everything else is
 * refused: an image from another site (a model's Markdown could leak data in its URL), plugins,
 * a `<base>`, form posts, and being framed by another page (clickjacking an Approve button).
 */
const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The security headers sent with every dashboard response (index.html, assets, the not-built page). */
const DASHBOARD_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': DASHBOARD_CSP,
  // For browsers that predate `frame-ancestors`.
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Paths the dashboard never answers: the API, MCP and A2A answer (and 404) for themselves. */
const API_PREFIXES = ['/api/', '/v1/', '/mcp/', '/.well-known/'];

/**
 * `path` as read when its spelling differs from a plain path's: percent-escapes decoded and doubled
 * slashes made single (`/a2a%2Fx` and `//a2a/x` are `/a2a/x`); undefined when it does not decode
 * (`/%E0%A4%A`). The dashboard keeps out of such a spelling of an API path, and A2A's 404 names it.
 */
export function plainPath(path: string): string | undefined {
  return safeDecodeUriComponent(path)?.replace(/\/{2,}/g, '/');
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** What {@link serveDashboard} leaves to the API. */
export interface DashboardOptions {
  /** More paths the dashboard never answers, nor anything under them (A2A's listen path, `/metrics`). */
  apiPaths?: readonly string[];
  /**
   * Serve only the dashboard's own files (and `index.html` at `/`): for when A2A listens at `/`,
   * where every other path is A2A's to answer, or to 404. Otherwise a path that names no file is
   * answered `index.html`.
   */
  filesOnly?: boolean;
}

/**
 * Serves the built dashboard (static files, no data in them) at `/`: a file when one matches
 * the path, else `index.html` so client routes load the app. API paths (also when spelled with
 * percent-escapes or doubled slashes) and other methods pass through to the API. When the
 * dashboard is not built it says how to build it.
 *
 * @param dir the built dashboard; defaults to `web/dist/`.
 */
export function serveDashboard(dir: string = DASHBOARD_DIR, options: DashboardOptions = {}): MiddlewareHandler {
  const root = resolve(dir);
  const apiPaths = options.apiPaths ?? [];
  const prefixes = [...API_PREFIXES, ...apiPaths.map((path) => `${path.replace(/\/$/, '')}/`)];
  const exact = new Set(['/api', '/v1', '/mcp', ...apiPaths]);
  const isApiPath = (path: string): boolean => exact.has(path) || prefixes.some((prefix) => path.startsWith(prefix));
  return async (c: Context, next: Next) => {
    const path = c.req.path;
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      await next();
      return;
    }
    const plain = plainPath(path);
    // A path that does not decode (`/%E0%A4%A`) names no file: it goes on like any unknown path. One
    // that names an API path only once decoded or with its slashes doubled (`/a2a%2Fx`, `//a2a/x`)
    // is no client route either: an API client that spelled a path so gets the API's 404, not a page.
    if (plain === undefined || isApiPath(path) || isApiPath(plain)) {
      await next();
      return;
    }
    let file = resolve(join(root, plain));
    if (file !== root && !file.startsWith(root + sep)) {
      await next();
      return;
    }
    const isAsset = path.startsWith('/assets/');
    if (!(await isFile(file))) {
      // A missing asset is a 404, not the app, and so is any path that is not the dashboard's own
      // when A2A answers the rest; any other path is a client route.
      if (isAsset || extname(path) !== '' || (options.filesOnly === true && file !== root)) {
        await next();
        return;
      }
      file = join(root, 'index.html');
      if (!(await isFile(file))) {
        return c.text(
          'The dashboard is not built. Run `npm install` (its prepare script runs `vite build web`) and restart the daemon; the API is at /api.',
          503,
          DASHBOARD_SECURITY_HEADERS,
        );
      }
    }
    const type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
    // Built assets have content hashes in their names; index.html must always be fresh.
    const cache = isAsset ? 'public, max-age=31536000, immutable' : 'no-cache';
    const headers = { ...DASHBOARD_SECURITY_HEADERS, 'content-type': type, 'cache-control': cache };
    // A HEAD learns the file's length from its size, without reading it; a GET's from the bytes it sends.
    if (c.req.method === 'HEAD') return c.body(null, 200, { ...headers, 'content-length': String((await stat(file)).size) });
    const content = await readFile(file);
    return c.body(content, 200, { ...headers, 'content-length': String(content.byteLength) });
  };
}
