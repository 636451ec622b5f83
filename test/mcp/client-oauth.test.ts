import { spawn } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { ConfigSchema } from '../../src/config/index.ts';
import { loginMcpServer, mcpOAuthFile, type McpClientManager, type McpServerEntry } from '../../src/mcp/client/index.ts';
import { McpLoginRequiredError, mcpOAuthProvider } from '../../src/mcp/client/mcp-oauth.ts';
import type { HostResolver } from '../../src/tools/builtin/net-guard.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { callTool, makeManager, toolNamed, waitForStatus } from './client-helpers.ts';

/**
 * A remote MCP server behind OAuth, as a hosted one is: it answers 401 with its protected-resource
 * metadata (RFC 9728) naming the authorization server (oauth2-mock-server, a real OAuth 2 server
 * with PKCE), and serves only bearer tokens that server issued and that were not revoked.
 */
interface ProtectedMcpServer {
  url: string;
  /** Access tokens the authorization servers issued, still accepted, with the scopes each was granted. */
  live: Map<string, string[]>;
  /** Grant types of the token requests the authorization servers answered, in order. */
  grants: string[];
  /** Requests that reached the server. */
  requests: number;
  /** The authorization server the metadata names. */
  issuer(): string;
  /** Names another authorization server from now on, refusing the tokens of the old one. */
  moveTo(issuer: string): void;
  close(): Promise<void>;
}

/** How a test's server asks to be logged in to. */
interface ProtectedOptions {
  /** Where the protected-resource metadata is served: the well-known addresses by default, or only this path (named by the challenge). */
  metadataPath?: string;
  /** The scope the 401 challenge names. */
  challengeScope?: string;
  /** The scope a JSON-RPC method needs; a token without it is answered 403 insufficient_scope. */
  scopeFor?: (method: string) => string | undefined;
}

let authorization: OAuth2Server;
let resource: ProtectedMcpServer;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let manager: McpClientManager | undefined;
/** The scope the person consented to at the last authorization address (the browser visits it); the token answers grant it. */
let consented: string | undefined;
const others: OAuth2Server[] = [];

/** Keeps what `server` issues in `target.live` while it is the authorization server the metadata names (with the consented scope, as a real one answers), and every grant in `target.grants`. */
function track(server: OAuth2Server, target: Pick<ProtectedMcpServer, 'live' | 'grants'> & { issuer: () => string }): void {
  server.service.on('beforeResponse', (response: { body: Record<string, unknown> }, request: { body?: Record<string, unknown> }) => {
    if (typeof response.body['access_token'] !== 'string') return;
    if (consented !== undefined) response.body['scope'] = consented;
    target.grants.push(String(request.body?.['grant_type']));
    const scope = response.body['scope'];
    if (server.issuer.url === target.issuer()) target.live.set(response.body['access_token'], typeof scope === 'string' ? scope.split(' ') : []);
  });
}

async function startProtectedServer(issuer: string, options: ProtectedOptions = {}): Promise<ProtectedMcpServer> {
  const live = new Map<string, string[]>();
  const grants: string[] = [];
  let current = issuer;
  track(authorization, { live, grants, issuer: () => current });
  const mcp = createMcpHandler(() => {
    const server = new McpServer({ name: 'protected', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Says the caller is authorized', inputSchema: z.object({}) }, () => ({
      content: [{ type: 'text', text: 'authorized' }],
    }));
    return server;
  });
  const handle = toNodeHandler(mcp);
  let base = '';
  const metadataPaths =
    options.metadataPath === undefined ? ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'] : [options.metadataPath];
  const state = { requests: 0 };
  const server: Server = createServer((request, response) => {
    state.requests += 1;
    if (metadataPaths.includes(request.url ?? '')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${base}/mcp`, authorization_servers: [current] }));
      return;
    }
    if (request.url?.startsWith('/.well-known/')) {
      response.writeHead(404).end();
      return;
    }
    const metadata = `resource_metadata="${base}${metadataPaths[0] ?? ''}"`;
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const scopes = token === undefined ? undefined : live.get(token);
    if (scopes === undefined) {
      response
        .writeHead(401, { 'www-authenticate': `Bearer ${metadata}${options.challengeScope === undefined ? '' : `, scope="${options.challengeScope}"`}` })
        .end();
      return;
    }
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const parsed: unknown = body === '' ? undefined : JSON.parse(body);
      const method = (parsed as { method?: unknown } | undefined)?.method;
      const needed = typeof method === 'string' ? options.scopeFor?.(method) : undefined;
      if (needed !== undefined && !scopes.includes(needed)) {
        response.writeHead(403, { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed}", ${metadata}` }).end();
        return;
      }
      void handle(request as Parameters<typeof handle>[0], response, parsed);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return {
    url: `${base}/mcp`,
    live,
    grants,
    get requests() {
      return state.requests;
    },
    issuer: () => current,
    moveTo: (next) => {
      // The tokens of the old authorization server are refused from now on.
      current = next;
      live.clear();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await mcp.close();
    },
  };
}

/** Another authorization server, its tokens kept with `resource`'s. */
async function startAuthorizationServer(): Promise<OAuth2Server> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  await server.start(0, '127.0.0.1');
  others.push(server);
  track(server, resource);
  return server;
}

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-oauth-');
  consented = undefined;
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
  for (const server of others.splice(0)) await server.stop();
  await dir.remove();
});

const entry = (oauth: Record<string, unknown>, extra: Record<string, unknown> = {}): McpServerEntry =>
  ConfigSchema.parse({ mcp_servers: [{ name: 'hosted', allow_private_network: true, oauth, transport: { type: 'http', url: resource.url }, ...extra }] })
    .mcp_servers[0] as McpServerEntry;

/** Plays the person's browser: consents to the scope asked for, and follows the authorization address to the redirect, which lands on Loom's loopback listener. */
async function browse(url: URL): Promise<void> {
  consented = url.searchParams.get('scope') ?? undefined;
  const consent = await fetch(url, { redirect: 'manual' });
  const location = consent.headers.get('location');
  if (location === null) throw new Error(`the authorization server did not redirect (${consent.status})`);
  await fetch(location);
}

/** Runs `loginMcpServer` with the browser played by {@link browse}; resolves with the authorization address shown. */
async function logIn(hosted: McpServerEntry, oauthDir: string, resolve?: HostResolver): Promise<URL> {
  let shown: URL | undefined;
  await loginMcpServer(hosted, {
    dir: oauthDir,
    env: {},
    ...(resolve === undefined ? {} : { resolve }),
    showAuthorizationUrl: (url) => {
      shown = url;
      void browse(url);
    },
  });
  if (shown === undefined) throw new Error('the login showed no address');
  return shown;
}

/**
 * What the daemon's provider for `hosted` throws when a connection authenticated from `oauthDir`
 * connects and calls `whoami` (the SDK's own client and transport), or undefined when it worked.
 */
async function daemonRefusal(hosted: McpServerEntry, oauthDir: string): Promise<unknown> {
  const provider = mcpOAuthProvider(hosted, { dir: oauthDir, env: {} });
  const client = new Client({ name: 'daemon', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(resource.url), { ...(provider === undefined ? {} : { authProvider: provider }) }));
    await client.callTool({ name: 'whoami', arguments: {} });
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await client.close();
  }
}

/** The scope tokens an authorization address asks for. */
const scopesOf = (url: URL): string[] =>
  (url.searchParams.get('scope') ?? '')
    .split(' ')
    .filter((token) => token !== '')
    .sort();

describe('the MCP client against a server behind OAuth 2.1', () => {
  it('logs in once by the authorization-code flow with PKCE, keeps the tokens 0600, connects the daemon with them, and refreshes them when they die', async () => {
    const hosted = entry({ client_id: 'loom-test' });
    const oauthDir = `${dir.path}/mcp-oauth`;

    // The daemon alone cannot log in: the server is failed, saying what to run.
    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'failed');
    expect(manager.servers()[0]?.error).toContain('loom mcp login hosted');
    expect(manager.servers()[0]?.action).toMatchObject({ kind: 'login', command: 'loom mcp login hosted' });
    await manager.stop();

    let shown: URL | undefined;
    await loginMcpServer(hosted, {
      dir: oauthDir,
      env: {},
      showAuthorizationUrl: (url) => {
        shown = url;
        void browse(url);
      },
    });
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

  it('logs in from the command line: loom mcp login prints the address, waits for the browser, keeps the tokens, and tells the running daemon to reconnect', async () => {
    // The daemon's side of POST /api/mcp/servers/<name>/reconnect, as the CLI reaches it (LOOM_URL).
    const told: string[] = [];
    const daemon = createServer((request, response) => {
      told.push(`${request.method ?? ''} ${request.url ?? ''}`);
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => daemon.listen(0, '127.0.0.1', resolve));
    const daemonAddress = daemon.address();
    const daemonUrl = `http://127.0.0.1:${typeof daemonAddress === 'object' && daemonAddress !== null ? daemonAddress.port : 0}`;
    onTestFinished(() => new Promise<void>((resolve) => daemon.close(() => resolve())));
    const home = join(dir.path, 'home');
    await mkdir(home, { recursive: true });
    await writeFile(
      join(home, 'config.toml'),
      `[[mcp_servers]]\nname = "hosted"\nallow_private_network = true\n[mcp_servers.transport]\ntype = "http"\nurl = "${resource.url}"\n[mcp_servers.oauth]\nclient_id = "loom-test"\n`,
    );
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/loom.js'), 'mcp', 'login', 'hosted'], {
      env: { ...process.env, LOOM_HOME: home, LOOM_URL: daemonUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    expect(stdout).toBe('Logged in to "hosted". The running daemon reconnects to it now.\n');
    expect(told).toEqual(['POST /api/mcp/servers/hosted/reconnect']);
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
    await expect(loginMcpServer(hosted, { dir: dir.path, env: {}, showAuthorizationUrl: () => undefined })).rejects.toThrow(
      'uses client_credentials: the daemon gets its tokens itself',
    );
  });

  it('refuses an oauth table on a stdio server, and client credentials without their secret and issuer', () => {
    const problems = (server: Record<string, unknown>): string[] => {
      const result = ConfigSchema.safeParse({ mcp_servers: [server] });
      return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    };
    expect(problems({ name: 'local', oauth: {}, transport: { type: 'stdio', command: 'x' } })).toEqual([
      'mcp_servers.0.oauth: OAuth is for remote servers (transport sse or http); a stdio server gets its secrets through env',
    ]);
    expect(
      problems({ name: 'remote', oauth: { grant: 'client_credentials', client_id: 'x' }, transport: { type: 'http', url: 'https://mcp.example.com/mcp' } }),
    ).toEqual(['mcp_servers.0.oauth.client_id: client_credentials needs client_id, client_secret_env and issuer']);
  });

  it('follows the 401 challenge of the server: its resource_metadata (served at no well-known address) and its scope', async () => {
    await resource.close();
    resource = await startProtectedServer(authorization.issuer.url ?? '', { metadataPath: '/metadata/hosted', challengeScope: 'notes:read' });
    const shown = await logIn(entry({ client_id: 'loom-test' }), `${dir.path}/mcp-oauth`);
    expect(scopesOf(shown)).toEqual(['notes:read']);
    expect(shown.searchParams.get('resource')).toBe(resource.url);
    expect(resource.grants).toEqual(['authorization_code']);
  });

  it("sends the login through the daemon's address guard: a server whose name resolves to loopback is refused without allow_private_network, reaching nothing", async () => {
    const port = new URL(resource.url).port;
    const hosted = entry({ client_id: 'loom-test' }, { allow_private_network: false, transport: { type: 'http', url: `http://hosted.test:${port}/mcp` } });
    const resolve: HostResolver = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    await expect(logIn(hosted, `${dir.path}/mcp-oauth`, resolve)).rejects.toThrow(
      /URL http:\/\/hosted\.test:\d+ is refused: loopback addresses are refused unless allow_private_network = true \(hosted\.test resolves to 127\.0\.0\.1\)/,
    );
    expect(resource.requests).toBe(0);
  });

  it("checks the authorization server the server's metadata names like a server URL: one at a cloud-metadata address is refused, even with allow_private_network, and sent nothing", async () => {
    resource.moveTo('http://as.test:8080/');
    const resolve: HostResolver = (host) => Promise.resolve([{ address: host === 'as.test' ? '169.254.169.254' : '127.0.0.1', family: 4 }]);
    await expect(logIn(entry({ client_id: 'loom-test' }), `${dir.path}/mcp-oauth`, resolve)).rejects.toThrow(
      /URL http:\/\/as\.test:8080 is refused: it is a cloud metadata address \(as\.test resolves to 169\.254\.169\.254\)/,
    );
    expect(resource.grants).toEqual([]);
  });

  it('reports a step-up to a wider scope as a login to run, and the next login asks for the old scope and the new (SEP-2350)', async () => {
    await resource.close();
    resource = await startProtectedServer(authorization.issuer.url ?? '', {
      challengeScope: 'notes:read',
      scopeFor: (method) => (method === 'tools/call' ? 'notes:write' : 'notes:read'),
    });
    const hosted = entry({ client_id: 'loom-test' });
    const oauthDir = `${dir.path}/mcp-oauth`;
    expect(scopesOf(await logIn(hosted, oauthDir))).toEqual(['notes:read']);

    // The daemon cannot open a browser: the call that meets 403 insufficient_scope fails with the command to run.
    const refusal = await daemonRefusal(hosted, oauthDir);
    expect(refusal).toBeInstanceOf(McpLoginRequiredError);
    expect(refusal).toMatchObject({
      name: 'McpLoginRequiredError',
      command: 'loom mcp login hosted',
      reason: 'the server asks for scope "notes:write" beyond the login\'s ("notes:read")',
      message: 'MCP server "hosted" needs a login: the server asks for scope "notes:write" beyond the login\'s ("notes:read"); run "loom mcp login hosted"',
    });

    // Through the daemon's manager: the connection stays up for what the login allows, and the server shows the login to run.
    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'connected');
    expect((await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).text).toContain('run "loom mcp login hosted"');
    expect(manager.servers()[0]).toMatchObject({
      status: 'connected',
      action: { kind: 'login', command: 'loom mcp login hosted', reason: 'the server asks for scope "notes:write" beyond the login\'s ("notes:read")' },
    });
    await manager.stop();

    expect(scopesOf(await logIn(hosted, oauthDir))).toEqual(['notes:read', 'notes:write']);
    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'connected');
    expect(await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).toEqual({ text: 'authorized' });
  });

  it('reports a move to another authorization server as a login to run, and the next login goes to the new one (SEP-2352)', async () => {
    const hosted = entry({ client_id: 'loom-test' });
    const oauthDir = `${dir.path}/mcp-oauth`;
    await logIn(hosted, oauthDir);
    const moved = await startAuthorizationServer();
    resource.moveTo(moved.issuer.url ?? '');

    const refusal = await daemonRefusal(hosted, oauthDir);
    expect(refusal).toBeInstanceOf(McpLoginRequiredError);
    expect(refusal).toMatchObject({
      command: 'loom mcp login hosted',
      reason: `its authorization server changed from "${authorization.issuer.url ?? ''}" to "${moved.issuer.url ?? ''}", and the login's registration and tokens belong to the old one`,
    });
    // Nothing went to the old authorization server (no refresh there) after the move.
    expect(resource.grants).toEqual(['authorization_code']);

    const shown = await logIn(hosted, oauthDir);
    expect(shown.origin).toBe(new URL(moved.issuer.url ?? '').origin);
    ({ manager } = makeManager([hosted], {}, undefined, undefined, oauthDir));
    manager.start();
    await waitForStatus(manager, 'hosted', 'connected');
    expect(await callTool(toolNamed(manager, 'mcp_hosted_whoami'), {})).toEqual({ text: 'authorized' });
  });
});
