import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';
import { API } from '../src/wire/routes.ts';

/** src/wire's route table, which the dashboard's requests are built from (web/src/api.ts). */
const ROUTE_TABLE = fileURLToPath(new URL('../src/wire/routes.ts', import.meta.url));

/**
 * The route table as the dashboard's bundle holds it: each route's method, path and answer's
 * media, what `pathOf` and `apiClient` (src/wire/api-client.ts) read. The table's prose and the
 * zod schemas of its bodies and queries (with zod itself, 110 kB) stay out; the dashboard's
 * sources are still type-checked against the whole table (`tsc -p web`: test/web/web-typecheck.test.ts).
 */
function routeTable(): Plugin {
  const routes = Object.fromEntries(
    Object.entries(API).map(([name, route]) => [name, { method: route.method, path: route.path, answer: { content: route.answer.content } }]),
  );
  return {
    name: 'loom-route-table',
    enforce: 'pre',
    load: (id) => (id === ROUTE_TABLE ? `export const API = ${JSON.stringify(routes)};\n` : undefined),
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
