/**
 * OAuth 2.1 for remote MCP servers (`[[mcp_servers]] oauth`), on the MCP SDK's own auth support:
 * `authorization_code` with PKCE through a loopback redirect (`loom mcp login <server>`, once;
 * the tokens are kept in `LOOM_HOME/data/mcp-oauth/<server>.json`, mode 0600, and refreshed by
 * the SDK as they expire), or `client_credentials` for an unattended daemon. The daemon never
 * opens a browser: a server that needs a person to log in (no tokens, a refresh refused, a wider
 * scope asked for, another authorization server) fails with {@link McpLoginRequiredError}, which
 * names the command that fixes it. Every request of a login goes through the daemon's address
 * guard (`vetMcpUrl`, pinned, other hosts checked the same way).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import {
  auth,
  ClientCredentialsProvider,
  computeScopeUnion,
  extractWWWAuthenticateParams,
  type OAuthClientInformationContext,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { LoomError } from '../../errors/index.ts';
import type { HostResolver } from '../../tools/index.ts';
import { createPinnedFetch, withCheckedOtherHosts } from './pinned-fetch.ts';
import { expandHeaders, MAX_MCP_MESSAGE_BYTES, type McpFetch, type McpServerEntry, sizeLimitedFetch, type VetMcpUrlOptions, vetMcpUrl } from './security.ts';

/** How long the exchange of a login's code for tokens may take once the browser is back, in milliseconds. */
const LOGIN_EXCHANGE_MS = 60_000;

/** What is kept for one server between runs. */
interface StoredSession {
  client?: StoredOAuthClientInformation;
  tokens?: StoredOAuthTokens;
  codeVerifier?: string;
  discovery?: OAuthDiscoveryState;
  /**
   * The scope the last login asked for, widened by what the server asked for since (a step-up's
   * `insufficient_scope`): the next login asks for all of it, so a step-up loses nothing granted
   * before (SEP-2350).
   */
  scope?: string;
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
    throw new Error(`the OAuth session in ${file} cannot be read (${error instanceof Error ? error.message : String(error)}); delete it and log in again`, {
      cause: error,
    });
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

/**
 * Thrown when a person must log in before the daemon can use a server: it has no tokens, its
 * refresh was refused, the server asks for a scope beyond the login's (step-up), or the server's
 * authorization server changed. The daemon cannot open a browser, so it shows the server as
 * waiting for `command`. (Kept beside the provider that raises it, which the daemon and the
 * login share, rather than in a file of its own.)
 *
 * @example
 * if (error instanceof McpLoginRequiredError) show(`${error.reason}: run ${error.command}`);
 */
export class McpLoginRequiredError extends LoomError {
  /** The command that fixes it: `loom mcp login <server>`. */
  readonly command: string;
  /** Why a login is needed, e.g. `the server asks for scope "files:write" beyond the login's ("files:read")`. */
  readonly reason: string;

  constructor(server: string, reason: string) {
    const command = `loom mcp login ${server}`;
    super('MCP_LOGIN_REQUIRED', 'user', `MCP server "${server}" needs a login: ${reason}; run "${command}"`, {
      details: { server, command, reason },
      isRetryable: true,
    });
    this.command = command;
    this.reason = reason;
  }
}

/** The scope tokens of `scope` (space-separated, RFC 6749 section 3.3). */
function scopeTokens(scope: string | undefined): string[] {
  return (scope ?? '').split(/\s+/).filter((token) => token !== '');
}

/** Whether two issuers name the same authorization server (one trailing slash apart at most, as the SDK compares them). */
function sameIssuer(left: string, right: string): boolean {
  return left.replace(/\/$/, '') === right.replace(/\/$/, '');
}

/**
 * The `authorization_code` provider over a server's stored session: read from its file once, kept
 * in memory (the SDK asks for the tokens before every request), written whole on every change.
 * In a login (`redirectUrl` given) it sends the person to the authorization server; in the daemon
 * it never does, and every path that would need a person throws {@link McpLoginRequiredError}.
 */
class StoredSessionProvider implements OAuthClientProvider {
  readonly #entry: McpServerEntry;
  readonly #file: string;
  #session: Promise<StoredSession> | undefined;
  readonly #secret: string | undefined;
  readonly #redirect: URL | undefined;
  readonly #onRedirect: ((url: URL) => void) | undefined;
  #state: string | undefined;
  /** Set when the SDK dropped the tokens or the registration (a refresh or a client refused). */
  #dropped: 'tokens' | 'client' | undefined;

  constructor(entry: McpServerEntry, file: string, options: { secret?: string | undefined; redirectUrl?: URL; onRedirect?: (url: URL) => void }) {
    this.#entry = entry;
    this.#file = file;
    this.#secret = options.secret;
    this.#redirect = options.redirectUrl;
    this.#onRedirect = options.onRedirect;
  }

  /** Whether this is a login, which can send a person to the authorization server; the daemon's provider cannot. */
  get #interactive(): boolean {
    return this.#onRedirect !== undefined;
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

  #loginRequired(reason: string): McpLoginRequiredError {
    return new McpLoginRequiredError(this.#entry.name, reason);
  }

  /** The scope the stored session holds (what the last login asked for, widened since). */
  async storedScope(): Promise<string | undefined> {
    return (await this.#read()).scope;
  }

  /**
   * Starts a login from nothing but the scope asked for before: old tokens, verifier and
   * discovery go, and so does a dynamic registration (it names another redirect port, and maybe
   * another authorization server).
   */
  async startLogin(): Promise<void> {
    const { scope } = await this.#read();
    this.#session = Promise.resolve(scope === undefined ? {} : { scope });
    await rm(this.#file, { force: true });
    if (scope !== undefined) await writeSession(this.#file, { scope });
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

  /**
   * The client registration for the authorization server in use (`context.issuer`). One made
   * with another authorization server is never handed out: a login registers again; the daemon,
   * which cannot, reports that the server moved (SEP-2352).
   */
  async clientInformation(context?: OAuthClientInformationContext): Promise<StoredOAuthClientInformation | undefined> {
    const session = await this.#read();
    const recorded = session.tokens?.issuer ?? session.client?.issuer;
    const moved = context !== undefined && recorded !== undefined && !sameIssuer(recorded, context.issuer);
    if (moved && !this.#interactive)
      throw this.#loginRequired(
        `its authorization server changed from "${recorded}" to "${context.issuer}", and the login's registration and tokens belong to the old one`,
      );
    const configured = this.#entry.oauth?.client_id;
    // A configured client is the one for whichever authorization server is in use (the check above keeps the daemon from following a move).
    if (configured !== undefined)
      return {
        client_id: configured,
        ...(this.#secret === undefined ? {} : { client_secret: this.#secret }),
        ...(context === undefined ? {} : { issuer: context.issuer }),
      };
    const client = session.client;
    if (client !== undefined && context !== undefined && client.issuer !== undefined && !sameIssuer(client.issuer, context.issuer)) return undefined;
    if (client === undefined && !this.#interactive) {
      throw this.#loginRequired(this.#dropped === 'client' ? 'the authorization server refused its client registration' : 'nobody has logged in to it yet');
    }
    return client;
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

  /**
   * A login shows the address to the person. The daemon keeps the scope the authorization would
   * have asked for (so the next login asks for it too) and throws {@link McpLoginRequiredError}
   * saying why a person is needed.
   */
  async redirectToAuthorization(url: URL): Promise<void> {
    const session = await this.#read();
    const asked = url.searchParams.get('scope') ?? undefined;
    const scope = computeScopeUnion(this.#interactive ? undefined : session.scope, asked);
    if (scope !== session.scope) await this.#update((current) => ({ ...current, ...(scope === undefined ? {} : { scope }) }));
    if (this.#onRedirect !== undefined) {
      this.#onRedirect(url);
      return;
    }
    throw this.#loginRequired(this.#whyLogin(session, asked));
  }

  #whyLogin(session: StoredSession, asked: string | undefined): string {
    const tokens = session.tokens;
    if (tokens === undefined)
      return this.#dropped === 'tokens'
        ? 'its tokens could not be refreshed (the authorization server refused the refresh token)'
        : 'nobody has logged in to it yet';
    const granted = new Set(scopeTokens(tokens.scope ?? session.scope));
    const beyond = scopeTokens(asked).filter((token) => !granted.has(token) && token !== 'offline_access');
    if (beyond.length > 0) return `the server asks for scope "${beyond.join(' ')}" beyond the login's ("${[...granted].join(' ')}")`;
    return tokens.refresh_token === undefined ? 'its access token was refused and the login gave no refresh token' : 'its tokens could not be refreshed';
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    // Only a login redeems a code; the daemon's authorization request is never sent.
    if (!this.#interactive) return;
    await this.#update((session) => ({ ...session, codeVerifier }));
  }

  async codeVerifier(): Promise<string> {
    const verifier = (await this.#read()).codeVerifier;
    if (verifier === undefined) throw this.#loginRequired("the login's code verifier is missing");
    return verifier;
  }

  async saveDiscoveryState(discovery: OAuthDiscoveryState): Promise<void> {
    if (!this.#interactive) return;
    await this.#update((session) => ({ ...session, discovery }));
  }

  /**
   * The discovery a login made, for its own code exchange. The daemon gets none: the SDK runs
   * auth() there only after the server refused a token, and then the server's metadata is read
   * again, so an authorization server that changed is seen (the SDK's docs ask hosts to drop the
   * cached discovery on a 401 for that reason).
   */
  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    if (!this.#interactive) return undefined;
    return (await this.#read()).discovery;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all') {
      this.#dropped = 'client';
      const { scope: kept } = await this.#read();
      this.#session = Promise.resolve(kept === undefined ? {} : { scope: kept });
      await rm(this.#file, { force: true });
      if (kept !== undefined) await writeSession(this.#file, { scope: kept });
      return;
    }
    if (scope === 'client') this.#dropped = 'client';
    else if (scope === 'tokens') this.#dropped ??= 'tokens';
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
  if (secret === undefined || secret === '')
    throw new Error(`MCP server "${entry.name}": ${variable} (oauth.client_secret_env) is not set in the daemon's environment`);
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
  /** Resolves host names for the address guard (the system resolver unless a test injects another). */
  resolve?: HostResolver | undefined;
}

/** What a server's 401 (or 403) says about logging in to it: where its metadata is, and the scope it wants. */
interface Challenge {
  resourceMetadataUrl?: URL | undefined;
  scope?: string | undefined;
}

/**
 * Asks the server, without a token, what it wants: one request as a client's first would be (a
 * `tools/list` POST over Streamable HTTP, the event stream's GET over legacy SSE; no
 * `initialize`, which would open a session), whose 401 challenge names the protected-resource
 * metadata and the scope (RFC 9728, RFC 6750). Anything but a challenge is no hint.
 */
async function readChallenge(
  entry: McpServerEntry & { transport: { url: string } },
  fetch: McpFetch,
  env: McpOAuthOptions['env'],
  signal: AbortSignal,
): Promise<Challenge> {
  const headers = entry.transport.type === 'http' ? expandHeaders(entry.name, entry.transport.headers, env) : {};
  const response =
    entry.transport.type === 'sse'
      ? await fetch(entry.transport.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal })
      : await fetch(entry.transport.url, {
          method: 'POST',
          headers: { ...headers, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
          signal,
        });
  await response.body?.cancel().catch(() => undefined);
  if (response.status !== 401 && response.status !== 403) return {};
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
  return { resourceMetadataUrl, scope };
}

/**
 * Runs the authorization-code flow with PKCE for a server with `oauth.grant =
 * "authorization_code"`: a one-time redirect listener on 127.0.0.1 (a free port); an
 * unauthenticated request to the server whose 401 challenge says where its metadata is and what
 * scope it wants; the authorization address shown to the person, asking for that scope, the
 * entry's and what the server asked for since the last login (a step-up); the code exchanged for
 * tokens once the browser comes back with the right `state`. Every request (the server,
 * discovery, registration, token) goes through the daemon's address guard: each host is checked
 * like a server URL (loopback and private addresses only with `allow_private_network`, cloud
 * metadata never) and pinned to the addresses that passed. The tokens are stored for the daemon.
 * @throws {McpServerRefusedError} for a server or authorization server the guard refuses.
 * @throws {Error} naming what failed: a server that is not remote or has no OAuth, a refused or
 *   abandoned authorization, a state that does not match.
 */
export async function loginMcpServer(entry: McpServerEntry, options: McpLoginOptions): Promise<void> {
  if (entry.transport.type === 'stdio' || entry.oauth === undefined)
    throw new Error(`MCP server "${entry.name}" has no oauth table: add [mcp_servers.oauth] to config.toml to log in to it`);
  if (entry.oauth.grant !== 'authorization_code')
    throw new Error(`MCP server "${entry.name}" uses client_credentials: the daemon gets its tokens itself, no login is needed`);
  const remote = entry as McpServerEntry & { transport: { url: string } };
  const serverUrl = entry.transport.url;
  const timeoutMs = options.timeoutMs ?? 5 * 60_000;
  const vet: VetMcpUrlOptions & { signal: AbortSignal } = { resolve: options.resolve, signal: AbortSignal.timeout(timeoutMs) };
  // The daemon's guard, as its connections use it (mcp-client-manager's remoteFetch).
  const vetted = await vetMcpUrl(entry.name, serverUrl, entry.allow_private_network, vet);
  const pinned = createPinnedFetch(entry.name, vetted);
  const fetchFn = sizeLimitedFetch(MAX_MCP_MESSAGE_BYTES, withCheckedOtherHosts(entry.name, pinned.fetch, vetted.url, entry.allow_private_network, vet));
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
    response
      .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
      .end(failed === null ? 'Loom is logged in. You can close this page.' : `The login failed: ${failed}. You can close this page.`);
    arrived(url);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
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
    const challenge = await readChallenge(remote, fetchFn, options.env, vet.signal);
    // SEP-2350: what the entry names, what the server asked for since (a step-up), and what it asks for now.
    const scope = computeScopeUnion(entry.oauth.scope, await provider.storedScope(), challenge.scope);
    const resourceMetadataUrl = challenge.resourceMetadataUrl;
    const common = { serverUrl, fetchFn, ...(scope === undefined ? {} : { scope }), ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl }) };
    await provider.startLogin();
    const first = await auth(provider, common);
    if (first === 'AUTHORIZED') return;
    const returned = await Promise.race([
      callback,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`nobody completed the login within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
      }),
    ]);
    const failed = returned.searchParams.get('error');
    if (failed !== null)
      throw new Error(
        `the authorization server refused the login: ${failed}${returned.searchParams.has('error_description') ? ` (${returned.searchParams.get('error_description') ?? ''})` : ''}`,
      );
    if (returned.searchParams.get('state') !== provider.expectedState())
      throw new Error('the login came back with a state that does not match the one sent; nothing was stored');
    const code = returned.searchParams.get('code');
    if (code === null) throw new Error('the login came back without an authorization code');
    const iss = returned.searchParams.get('iss');
    // The code's exchange gets time of its own: the person may have come back at the end of the wait.
    vet.signal = AbortSignal.timeout(LOGIN_EXCHANGE_MS);
    const second = await auth(provider, { ...common, authorizationCode: code, ...(iss === null ? {} : { iss }) });
    if (second !== 'AUTHORIZED') throw new Error('the authorization server did not issue tokens for the code');
  } finally {
    clearTimeout(timer);
    pinned.close();
    listener.closeAllConnections();
    await new Promise((resolve) => listener.close(resolve));
  }
}
