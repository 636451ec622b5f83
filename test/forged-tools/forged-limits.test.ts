/**
 * Limits a forged tool cannot get around: a sandboxed fetch stays inside
 * `[emergent].fetch_domain_allowlist` on every redirect hop, and a compose mapping cannot multiply
 * a step's input past MAX_MAPPED_INPUT_CHARS.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_MAPPED_INPUT_CHARS } from '../../src/forged-tools/references.ts';
import { APPROVE } from '../support/forge-requests.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-forged-limits-');
  host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

describe('a sandboxed fetch and redirects', () => {
  let web: Server;
  let port: number;
  /** Every request the web server got, as `host path`. */
  const seen: string[] = [];

  beforeEach(async () => {
    seen.length = 0;
    web = createServer((request, response) => {
      const hostHeader = request.headers.host ?? '';
      seen.push(`${hostHeader.split(':')[0] ?? ''} ${request.url ?? ''}`);
      if (hostHeader.startsWith('localhost') && request.url === '/leave') {
        response.writeHead(302, { location: `http://127.0.0.1:${port}/secret` }).end();
      } else if (hostHeader.startsWith('localhost') && request.url === '/stay') {
        response.writeHead(302, { location: '/final' }).end();
      } else {
        response.end(`body of ${request.url ?? ''}`);
      }
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    port = (web.address() as AddressInfo).port;
  });
  afterEach(async () => {
    web.closeAllConnections();
    await new Promise<void>((resolve) => web.close(() => resolve()));
  });

  async function forgeProbe(): Promise<void> {
    // The agent may reach both names; only "localhost" is in its fetch_domain_allowlist.
    await host.kernel.spawn(
      manifest(
        `name = "fetcher"\n${model()}[capabilities]\ntools = ["forge_tool", "http_request"]\nnetwork = ["localhost:${port}", "127.0.0.1:${port}"]\n[emergent]\nallowed_sandbox_apis = ["fetch"]\nfetch_domain_allowlist = ["localhost"]\n`,
      ),
    );
    server.script([APPROVE]);
    const code =
      'async function execute(input) { if (input.target === "none") return { skipped: true }; try { const r = await fetch(input.target); return { url: r.url, redirected: r.redirected, body: await r.text() }; } catch (e) { return { refused: e.message }; } }';
    const forged = await host.kernel.forgedTools.forge(
      'fetcher',
      {
        name: 'probe',
        description: 'Fetches a URL',
        inputSchema: { type: 'object', properties: { target: { type: 'string' } } },
        implementation: { mode: 'sandbox', code, allowlist: ['fetch'] },
        testCases: [{ input: { target: 'none' } }],
      },
      'test',
    );
    expect(forged.ok).toBe(true);
  }

  it('refuses a redirect to a host outside fetch_domain_allowlist before requesting it, and audits the refusal', async () => {
    await forgeProbe();
    const result = await host.kernel.runAgentTool('fetcher', 'probe', { target: `http://localhost:${port}/leave` });
    expect(result.structured).toEqual({
      refused: `fetch to "127.0.0.1" refused (a redirect from "http://localhost:${port}/leave"): not in [emergent].fetch_domain_allowlist (localhost)`,
    });
    expect(seen).toEqual(['localhost /leave']);
    const faults = await host.kernel.audit({ agent: 'fetcher', type: 'tool-sandbox-fail' });
    expect(faults.map((entry) => [entry.data['outcome'], entry.data['reason']])).toEqual([
      ['fetch-domain', `fetch to "127.0.0.1" refused (a redirect from "http://localhost:${port}/leave"): not in [emergent].fetch_domain_allowlist (localhost)`],
    ]);
  });

  it('follows a redirect that stays inside fetch_domain_allowlist to its end', async () => {
    await forgeProbe();
    const result = await host.kernel.runAgentTool('fetcher', 'probe', { target: `http://localhost:${port}/stay` });
    expect(result.structured).toEqual({ url: `http://localhost:${port}/final`, redirected: true, body: 'body of /final' });
    expect(seen).toEqual(['localhost /stay', 'localhost /final']);
  });
});

describe('a compose mapping that multiplies its input', () => {
  async function forgeCopier(ws: string, content: string): Promise<void> {
    await host.kernel.spawn(
      manifest(`name = "copier"\nworkspace = "${ws}"\n${model()}[capabilities]\ntools = ["forge_tool", "file_read", "file_write"]\n[emergent]\n`),
    );
    server.script([APPROVE]);
    const forged = await host.kernel.forgedTools.forge(
      'copier',
      {
        name: 'copy_many',
        description: 'Copies a file, many times over',
        inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        implementation: {
          mode: 'compose',
          steps: [
            { name: 'read', tool: 'file_read', inputMapping: { path: '$input.path' } },
            { name: 'write', tool: 'file_write', inputMapping: { path: 'out.txt', content } },
          ],
        },
        testCases: [{ input: { path: 'small.txt' } }],
      },
      'test',
    );
    expect(forged.ok).toBe(true);
  }

  it('fails the step at MAX_MAPPED_INPUT_CHARS, naming the limit, and never calls its tool', async () => {
    const ws = join(dir.path, 'ws');
    await mkdir(ws);
    await writeFile(join(ws, 'small.txt'), 'abc');
    await writeFile(join(ws, 'seed.txt'), 'y'.repeat(50_000));
    // 400 copies of a 3-character file pass; of a 50,000-character one they would be 20,000,000.
    await forgeCopier(ws, '$prev.output'.repeat(400));
    const written = await readFile(join(ws, 'out.txt'), 'utf8');
    expect(written).toBe('abc'.repeat(400));

    const result = await host.kernel.runAgentTool('copier', 'copy_many', { path: 'seed.txt' });
    expect(result.isError).toBe(true);
    expect(result.text).toContain(
      `copy_many failed: step 2 "write" (file_write): cannot build the input: its mapping resolves to more than ${MAX_MAPPED_INPUT_CHARS.toLocaleString('en-US')} characters`,
    );
    expect(await readFile(join(ws, 'out.txt'), 'utf8')).toBe(written);
  });
});
