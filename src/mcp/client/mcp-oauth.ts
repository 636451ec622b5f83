/**
 * OAuth 2.1 for remote MCP servers (`[[mcp_servers]] oauth`), on the MCP SDK's own auth support:
 * `authorization_code` with PKCE through a loopback redirect (`loom mcp login <server>`, once;
 * the tokens are kept in `LOOM_HOME/mcp-oauth/<server>.json`, mode 0600, and refreshed by the
 * SDK as they expire), or `client_credentials` for an unattended daemon. The daemon never opens
 * a browser: a server whose tokens are missing or can no longer be refreshed fails with the
 * command that fixes it.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import {
  auth,
  ClientCredentialsProvider,
  type FetchLike,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { McpServerEntry } from './security.ts';

/** What is kept for one server between runs. */
interface StoredSession {
  client?: StoredOAuthClientInformation;
  tokens?: StoredOAuthTokens;
  codeVerifier?: string;
  discovery?: OAuthDiscoveryState;
}

/** The file holding a server's OAuth session. */
export function mcpOAuthFile(dir: string, server: string): string {
  return join(dir, `${server}.json`);
}

async function readSession(file: string): Promise<StoredSession> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StoredSession;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`the OAuth session in ${file} cannot be read (${error instanceof Error ? error.message : String(error)}); delete it and log in again`, { cause: error });
  }
}

/** Writes the session readable by its owner only (the folder too), replacing the file whole. */
async function writeSession(file: string, session: StoredSession): Promise<void> {
  const dir = join(file, '..');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/** Thrown (and shown as the server's error) when a person must log in first. */
export class McpLoginRequiredError extends Error {
  constructor(server: string) {
    super(`MCP server "${server}" needs a login: run "loom mcp login ${server}"`);
    this.name = 'McpLoginRequiredError';
  }
}

/**
 * The `authorization_code` provider over a server's stored session: read from its file once, kept
 * in memory (the SDK asks for the tokens before every request), written whole on every change.
 */
class StoredSessionProvider implements OAuthClientProvider {
  readonly #entry: McpServerEntry;
  readonly #file: string;
  #session: Promise<StoredSession> | undefined;
  readonly #secret: string | undefined;
  readonly #redirect: URL | undefined;
  readonly #onRedirect: ((url: URL) => void) | undefined;
  #state: string | undefined;

  constructor(entry: McpServerEntry, file: string, options: { secret?: string | undefined; redirectUrl?: URL; onRedirect?: (url: URL) => void }) {
    this.#entry = entry;
    this.#file = file;
    this.#secret = options.secret;
    this.#redirect = options.redirectUrl;
    this.#onRedirect = options.onRedirect;
  }

  #read(): Promise<StoredSession> {
    this.#session ??= readSession(this.#file);
    return this.#session;
  }

  async #update(change: (session: StoredSession) => StoredSession): Promise<void> {
    const session = change({ ...(await this.#read()) });
    this.#session = Promise.resolve(session);
    await writeSession(this.#file, session);
  }

  get redirectUrl(): URL {
    // Outside a login the daemon never redirects; the address only has to be the registered one.
    return this.#redirect ?? new URL('http://127.0.0.1/callback');
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: `Loom (${this.#entry.name})`,
      redirect_uris: [String(this.redirectUrl)],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: this.#secret === undefined ? 'none' : 'client_secret_basic',
      ...(this.#entry.oauth?.scope === undefined ? {} : { scope: this.#entry.oauth.scope }),
    };
  }

  state(): string {
    this.#state = randomBytes(16).toString('base64url');
    return this.#state;
  }

  /** The `state` sent with the last authorization request. */
  expectedState(): string | undefined {
    return this.#state;
  }

  async clientInformation(): Promise<StoredOAuthClientInformation | undefined> {
    const configured = this.#entry.oauth?.client_id;
    if (configured !== undefined) return { client_id: configured, ...(this.#secret === undefined ? {} : { client_secret: this.#secret }) };
    return (await this.#read()).client;
  }

  async saveClientInformation(client: StoredOAuthClientInformation): Promise<void> {
    await this.#update((session) => ({ ...session, client }));
  }

  async tokens(): Promise<StoredOAuthTokens | undefined> {
    return (await this.#read()).tokens;
  }

  async saveTokens(tokens: StoredOAuthTokens): Promise<void> {
    await this.#update((session) => ({ ...session, tokens }));
  }

  redirectToAuthorization(url: URL): void {
    if (this.#onRedirect === undefined) throw new McpLoginRequiredError(this.#entry.name);
    this.#onRedirect(url);
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    await this.#update((session) => ({ ...session, codeVerifier }));
  }

  async codeVerifier(): Promise<string> {
    const verifier = (await this.#read()).codeVerifier;
    if (verifier === undefined) throw new McpLoginRequiredError(this.#entry.name);
    return verifier;
  }

  async saveDiscoveryState(discovery: OAuthDiscoveryState): Promise<void> {
    await this.#update((session) => ({ ...session, discovery }));
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return (await this.#read()).discovery;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all') {
      this.#session = Promise.resolve({});
      await rm(this.#file, { force: true });
      return;
    }
    const key = ({ client: 'client', tokens: 'tokens', verifier: 'codeVerifier', discovery: 'discovery' } as const)[scope];
    await this.#update((session) => {
      delete session[key];
      return session;
    });
  }
}

/** Where the OAuth of the daemon's MCP servers lives, and what it reads. */
export interface McpOAuthOptions {
  /** `LOOM_HOME/mcp-oauth`. */
  dir: string;
  env: Readonly<Record<string, string | undefined>>;
}

function secretOf(entry: McpServerEntry, env: McpOAuthOptions['env']): string | undefined {
  const variable = entry.oauth?.client_secret_env;
  if (variable === undefined) return undefined;
  const secret = env[variable];
  if (secret === undefined || secret === '') throw new Error(`MCP server "${entry.name}": ${variable} (oauth.client_secret_env) is not set in the daemon's environment`);
  return secret;
}

/**
 * The provider a connection to `entry` authenticates with, or undefined when it has no `oauth`.
 * The daemon's provider cannot redirect: a missing or dead session fails the connection with
 * {@link McpLoginRequiredError}.
 */
export function mcpOAuthProvider(entry: McpServerEntry, options: McpOAuthOptions): OAuthClientProvider | undefined {
  const oauth = entry.oauth;
  if (oauth === undefined) return undefined;
  if (oauth.grant === 'client_credentials') {
    return new ClientCredentialsProvider({
      clientId: oauth.client_id ?? '',
      clientSecret: secretOf(entry, options.env) ?? '',
      clientName: `Loom (${entry.name})`,
      ...(oauth.scope === undefined ? {} : { scope: oauth.scope }),
      expectedIssuer: oauth.issuer ?? '',
    });
  }
  return new StoredSessionProvider(entry, mcpOAuthFile(options.dir, entry.name), { secret: secretOf(entry, options.env) });
}

/** What {@link loginMcpServer} needs besides the entry. */
export interface McpLoginOptions extends McpOAuthOptions {
  /** Shows the person the address to open (the CLI prints it). */
  showAuthorizationUrl: (url: URL) => void;
  /** How long to wait for the browser to come back, in milliseconds (default 5 minutes). */
  timeoutMs?: number;
  /** The fetch the OAuth requests use (discovery, registration, token). */
  fetch?: FetchLike;
}

/**
 * Runs the authorization-code flow with PKCE for a server with `oauth.grant =
 * "authorization_code"`: a one-time redirect listener on 127.0.0.1 (a free port), the
 * authorization address shown to the person, the code exchanged for tokens once the browser
 * comes back with the right `state`. The tokens are stored for the daemon.
 * @throws {Error} naming what failed: a server that is not remote or has no OAuth, a refused or
 *   abandoned authorization, a state that does not match.
 */
export async function loginMcpServer(entry: McpServerEntry, options: McpLoginOptions): Promise<void> {
  if (entry.transport.type === 'stdio' || entry.oauth === undefined) throw new Error(`MCP server "${entry.name}" has no oauth table: add [mcp_servers.oauth] to config.toml to log in to it`);
  if (entry.oauth.grant !== 'authorization_code') throw new Error(`MCP server "${entry.name}" uses client_credentials: the daemon gets its tokens itself, no login is needed`);
  const serverUrl = entry.transport.url;
  let arrived!: (callback: URL) => void;
  const callback = new Promise<URL>((resolve) => {
    arrived = resolve;
  });
  const listener = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      response.writeHead(404).end();
      return;
    }
    const failed = url.searchParams.get('error');
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(failed === null ? 'Loom is logged in. You can close this page.' : `The login failed: ${failed}. You can close this page.`);
    arrived(url);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });
  const address = listener.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const provider = new StoredSessionProvider(entry, mcpOAuthFile(options.dir, entry.name), {
    secret: secretOf(entry, options.env),
    redirectUrl: new URL(`http://127.0.0.1:${port}/callback`),
    onRedirect: options.showAuthorizationUrl,
  });
  const fetchFn = options.fetch;
  const scope = entry.oauth.scope;
  let timer: NodeJS.Timeout | undefined;
  try {
    // A new login starts from nothing: old tokens and a registration for another port are dropped.
    if (entry.oauth.client_id === undefined) await provider.invalidateCredentials('all');
    else await provider.invalidateCredentials('tokens');
    const first = await auth(provider, { serverUrl, ...(scope === undefined ? {} : { scope }), ...(fetchFn === undefined ? {} : { fetchFn }) });
    if (first === 'AUTHORIZED') return;
    const timeoutMs = options.timeoutMs ?? 5 * 60_000;
    const returned = await Promise.race([
      callback,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`nobody completed the login within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
      }),
    ]);
    const failed = returned.searchParams.get('error');
    if (failed !== null) throw new Error(`the authorization server refused the login: ${failed}${returned.searchParams.has('error_description') ? ` (${returned.searchParams.get('error_description') ?? ''})` : ''}`);
    if (returned.searchParams.get('state') !== provider.expectedState()) throw new Error('the login came back with a state that does not match the one sent; nothing was stored');
    const code = returned.searchParams.get('code');
    if (code === null) throw new Error('the login came back without an authorization code');
    const iss = returned.searchParams.get('iss');
    const second = await auth(provider, { serverUrl, authorizationCode: code, ...(iss === null ? {} : { iss }), ...(fetchFn === undefined ? {} : { fetchFn }) });
    if (second !== 'AUTHORIZED') throw new Error('the authorization server did not issue tokens for the code');
  } finally {
    clearTimeout(timer);
    listener.closeAllConnections();
    await new Promise((resolve) => listener.close(resolve));
  }
}
