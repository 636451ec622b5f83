import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostApiApp, openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-router-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

describe("the API's routes", () => {
  it("are all of shapes Hono's RegExp router takes (a fixed segment beside a parameter with more after it would send every request to its slower trie router), and POST /api/tools/forged/<name> other than import is still no route", async () => {
    for (const config of [{}, { a2a: { enabled: true, listen_path: '/' } }]) {
      const app = hostApiApp(host, config, '127.0.0.1');
      const unknown = await app.request('/api/tools/forged/xyz', { method: 'POST' });
      // The router is chosen at the first request.
      expect(app.router.name).toBe('SmartRouter + RegExpRouter');
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({
        error: { code: 'ROUTE_NOT_FOUND', message: expect.stringMatching(/^no route POST \/api\/tools\/forged\/xyz/) as string },
      });
      const imported = await app.request('/api/tools/forged/import', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(imported.status).toBe(400);
      expect(await imported.json()).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
    }
  });
});
