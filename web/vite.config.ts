import { fileURLToPath } from 'node:url';
import { defineConfig, normalizePath, type Plugin } from 'vite';
import { wireRoute } from '../src/wire/api-client.ts';
import { API } from '../src/wire/routes.ts';

/** src/wire's route table, which the dashboard's requests are built from (web/src/api.ts). */
const ROUTE_TABLE = normalizePath(fileURLToPath(new URL('../src/wire/routes.ts', import.meta.url)));

/**
 * The route table as the dashboard's bundle holds it: each route as `wireRoute` gives it (its
 * method, path and answer's media), the type `pathOf` and `apiClient` (src/wire/api-client.ts)
 * take, so they cannot read more than the bundle holds without `tsc` failing. The table's prose
 * and the zod schemas of its bodies and queries (with zod itself, 110 kB) stay out; the
 * dashboard's sources are still type-checked against the whole table (`npm run typecheck` runs
 * `tsc -p web/tsconfig.json`).
 */
function routeTable(): Plugin {
  const routes = Object.fromEntries(Object.entries(API).map(([name, route]) => [name, wireRoute(route)]));
  return {
    name: 'loom-route-table',
    enforce: 'pre',
    // An id may carry a query (`?v=…`) and, on Windows, backslashes: compared as Vite writes paths.
    load: (id) => (normalizePath(id.replace(/\?.*$/, '')) === ROUTE_TABLE ? `export const API = ${JSON.stringify(routes)};\n` : undefined),
  };
}

/**
 * The dashboard, built by `npm install` (`prepare`: `vite build web`) into web/dist/, which the
 * daemon serves at `/` (src/http/serve-dashboard.ts). JSX uses Preact's automatic runtime.
 */
export default defineConfig({
  base: '/',
  plugins: [routeTable()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
  },
  server: { proxy: { '/api': 'http://127.0.0.1:4200' } },
});
