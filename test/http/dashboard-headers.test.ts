import { mkdir, writeFile } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

/** A built dashboard as Vite lays it out: index.html and a hashed script under assets/. */
async function writeDashboard(outDir: string): Promise<void> {
  await mkdir(join(outDir, 'assets'), { recursive: true });
  await writeFile(
    join(outDir, 'index.html'),
    '<!doctype html><title>Loom</title><script type="module" src="/assets/index-abc123.js"></script><div id="app"></div>',
  );
  await writeFile(join(outDir, 'assets', 'index-abc123.js'), 'document.title = "Loom";');
}

beforeEach(async () => {
  dir = await makeTempDir('loom-dashboard-headers-');
  const outDir = join(dir.path, 'dist');
  await writeDashboard(outDir);
  api = await startApi(dir.path, { env: { LOOM_DASHBOARD_DIR: outDir } });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** The directives of a Content-Security-Policy header, by name. */
function directives(header: string | null): Map<string, string> {
  return new Map(
    (header ?? '')
      .split(';')
      .map((part) => part.trim())
      .filter((part) => part !== '')
      .map((part) => {
        const [name = '', ...sources] = part.split(/\s+/);
        return [name, sources.join(' ')];
      }),
  );
}

describe("the dashboard's security headers", () => {
  for (const [what, path] of [
    ['index.html at /', '/'],
    ['index.html for a client route', '/approvals'],
    ['a built asset', '/assets/index-abc123.js'],
  ] as const) {
    it(`refuses framing and remote images on ${what}`, async () => {
      const response = await api.request(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      const csp = directives(response.headers.get('content-security-policy'));
      expect(csp.get('frame-ancestors')).toBe("'none'");
      expect(csp.get('img-src')).toBe("'self' data:");
      expect(csp.get('script-src')).toBe("'self'");
      expect(csp.get('connect-src')).toBe("'self'");
      expect(csp.get('object-src')).toBe("'none'");
      expect(csp.get('base-uri')).toBe("'none'");
      expect(csp.get('default-src')).toBe("'none'");
    });
  }
});

describe('a dashboard path with a malformed percent-encoding', () => {
  it('answers like an unknown path (404), not 500', async () => {
    const unknown = await api.request('/assets/missing.js');
    const malformed = await api.request('/%E0%A4%A');
    expect(malformed.status).toBe(404);
    expect(malformed.status).toBe(unknown.status);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe("the API's security headers", () => {
  it("come with every answer of the API, MCP and A2A, refusals and errors included, and leave the dashboard's policy as it is", async () => {
    const keyed = await startApi(join(dir.path, 'keyed'), OWNER_AND_HELPER_KEYS);
    try {
      const answers = [
        await api.request('/api/health'),
        await api.request('/api/agents'),
        await api.request('/api/agents/nobody'),
        await api.request('/api/no-such-route'),
        await api.request('/.well-known/agent-card.json'),
        await keyed.request('/api/agents'),
        await keyed.request('/mcp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
      ];
      expect(answers.map((response) => response.status)).toEqual([200, 200, 404, 404, 200, 401, 401]);
      // A forged Host (fetch sends its own), refused before anything else runs.
      const forged = await new Promise<IncomingMessage>((resolve, reject) =>
        httpGet(`${api.url}/api/agents`, { headers: { host: 'rebound.example' } }, resolve).on('error', reject),
      );
      forged.resume();
      expect(forged.statusCode).toBe(403);
      const fetched = answers.map((response) => (name: string) => response.headers.get(name));
      const raw = (name: string): string | null => (forged.headers[name] as string | undefined) ?? null;
      for (const header of [...fetched, raw]) {
        expect(header('x-content-type-options')).toBe('nosniff');
        expect(header('x-frame-options')).toBe('DENY');
        const csp = directives(header('content-security-policy'));
        expect(csp.get('default-src')).toBe("'none'");
        expect(csp.get('frame-ancestors')).toBe("'none'");
      }
      expect(directives((await api.request('/')).headers.get('content-security-policy')).get('img-src')).toBe("'self' data:");
    } finally {
      await keyed.close();
    }
  });
});
