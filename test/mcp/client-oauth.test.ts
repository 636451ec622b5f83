import { spawn } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigSchema } from '../../src/config/index.ts';
import { loginMcpServer, mcpOAuthFile, type McpClientManager, type McpServerEntry } from '../../src/mcp/client/index.ts';
import { makeTempDir } from '../helpers/test-kernel.ts';
import { callTool, makeManager, toolNamed, waitForStatus } from './client-helpers.ts';

/**
 * A remote MCP server behind OAuth, as a hosted one is: it answers 401 with its protected-resource
 * metadata (RFC 9728) naming the authorization server (oauth2-mock-server, a real OAuth 2 server
 * with PKCE), and serves only bearer tokens that server issued and that were not revoked.
 */
interface ProtectedMcpServer {
  url: string;
  /** Access tokens the authorization server issued, still accepted. */
  live: Set<string>;
  /** Grant types of the token requests the authorization server answered, in order. */
  grants: string[];
  close(): Promise<void>;
}

let authorization: OAuth2Server;
let resource: ProtectedMcpServer;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let manager: McpClientManager | undefined;

async function startProtectedServer(issuer: string): Promise<ProtectedMcpServer> {
  const live = new Set<string>();
  const grants: string[] = [];
  authorization.service.on('beforeResponse', (response: { body: Record<string, unknown> }, request: { body?: Record<string, unknown> }) => {
    if (typeof response.body['access_token'] === 'string') live.add(response.body['access_token']);
    grants.push(String(request.body?.['grant_type']));
  });
  const mcp = createMcpHandler(() => {
    const server = new McpServer({ name: 'protected', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Says the caller is authorized', inputSchema: z.object({}) }, () => ({ content: [{ type: 'text', text: 'authorized' }] }));
    return server;
  });
  const handle = toNodeHandler(mcp);
  let base = '';
  const server: Server = createServer((request, response) => {
    if (request.url === '/.well-known/oauth-protected-resource/mcp' || request.url === '/.well-known/oauth-protected-resource') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${base}/mcp`, authorization_servers: [issuer] }));
      return;
    }
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (token === undefined || !live.has(token)) {
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` }).end();
      return;
    }
    void handle(request as Parameters<typeof handle>[0], response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return {
    url: `${base}/mcp`,
    live,
    grants,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await mcp.close();
    },
  };
}

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-oauth-');
  authorization = new OAuth2Server();
  await authorization.issuer.keys.generate('RS256');
  await authorization.start(0, '127.0.0.1');
  resource = await startProtectedServer(authorization.issuer.url ?? '');
});
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await resource.close();
  await authorization.stop();
  await dir.remove();
});

const entry = (oauth: Record<string, unknown>): McpServerEntry =>
  ConfigSchema.parse({ mcp_servers: [{ name: 'hosted', allow_private_network: true, oauth, transport: { type: 'http', url: resource.url } }] }).mcp_servers[0] as McpServerEntry;

/** Plays the person's browser: follows the authorization address to the redirect, which lands on Loom's loopback listener. */
async function browse(url: URL): Promise<void> {
  const consent = await fetch(url, { redirect: 'manual' });
  const location = consent.headers.get('location');
  if (location === null) throw new Error(`the authorization server did not redirect (${consent.status})`);
  await fetch(location);
}

describe('the MCP client against a server behind OAuth 2.1', () => {
  it('logs in once by the authorization-code flow with PKCE, keeps the tokens 0600, connects the daemon with them, and refreshes them when they die', async () => {
    const hosted = entry({ client_id: 'loom-test' });
    const oauthDir = `${dir.path}/mcp-oauth`;

    // The daemon alone cannot log in: the server is failed, saying what to run.
    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'failed');
    expect(manager.servers()[0]?.error).toContain('loom mcp login hosted');
    await manager.stop();

    let shown: URL | undefined;
    await loginMcpServer(hosted, { dir: oauthDir, env: {}, showAuthorizationUrl: (url) => {
      shown = url;
      void browse(url);
    } });
    expect(shown?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(shown?.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(resource.grants).toEqual(['authorization_code']);
    const file = mcpOAuthFile(oauthDir, 'hosted');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(oauthDir)).mode & 0o777).toBe(0o700);

    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'connected');
    expect(await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).toEqual({ text: 'authorized' });

    // The access token is revoked: the next request is refused, the refresh token gets a new one.
    resource.live.clear();
    expect(await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).toEqual({ text: 'authorized' });
    expect(resource.grants).toEqual(['authorization_code', 'refresh_token']);
  });

  it('logs in from the command line: loom mcp login prints the address, waits for the browser, and keeps the tokens', async () => {
    const home = join(dir.path, 'home');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, 'config.toml'), `[[mcp_servers]]\nname = "hosted"\nallow_private_network = true\n[mcp_servers.transport]\ntype = "http"\nurl = "${resource.url}"\n[mcp_servers.oauth]\nclient_id = "loom-test"\n`);
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/loom.js'), 'mcp', 'login', 'hosted'], { env: { ...process.env, LOOM_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const address = await new Promise<URL>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const found = /^\s+(http:\/\/\S+)$/m.exec(stderr)?.[1];
        if (found !== undefined) resolve(new URL(found));
      });
    });
    expect(stderr).toContain('Open this address to log in to "hosted":');
    await browse(address);
    expect(await exited).toBe(0);
    expect(stdout).toBe('Logged in to "hosted". The daemon uses these tokens from its next connection to it.\n');
    expect((await stat(mcpOAuthFile(join(home, 'data', 'mcp-oauth'), 'hosted'))).mode & 0o777).toBe(0o600);
    expect(resource.grants).toEqual(['authorization_code']);
  });

  it('gets tokens by client credentials for an unattended daemon, and refuses a login for it', async () => {
    const hosted = entry({ grant: 'client_credentials', client_id: 'loom-daemon', client_secret_env: 'HOSTED_SECRET', issuer: authorization.issuer.url });
    ({ manager } = makeManager([hosted], { HOSTED_SECRET: 's3cret' }, undefined, undefined, `${dir.path}/mcp-oauth`));
    manager.start();
    await waitForStatus(manager, 'hosted', 'connected');
    expect(await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).toEqual({ text: 'authorized' });
    expect(resource.grants).toEqual(['client_credentials']);
    await expect(loginMcpServer(hosted, { dir: dir.path, env: {}, showAuthorizationUrl: () => undefined })).rejects.toThrow('uses client_credentials: the daemon gets its tokens itself');
  });

  it('refuses an oauth table on a stdio server, and client credentials without their secret and issuer', () => {
    const problems = (server: Record<string, unknown>): string[] => {
      const result = ConfigSchema.safeParse({ mcp_servers: [server] });
      return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    };
    expect(problems({ name: 'local', oauth: {}, transport: { type: 'stdio', command: 'x' } })).toEqual(['mcp_servers.0.oauth: OAuth is for remote servers (transport sse or http); a stdio server gets its secrets through env']);
    expect(problems({ name: 'remote', oauth: { grant: 'client_credentials', client_id: 'x' }, transport: { type: 'http', url: 'https://mcp.example.com/mcp' } })).toEqual(['mcp_servers.0.oauth.client_id: client_credentials needs client_id, client_secret_env and issuer']);
  });
});
