import type { MiddlewareHandler } from 'hono';
import { isLoopbackBind } from '../access/index.ts';
import { HttpRequestError } from '../errors/index.ts';

/** The names a loopback daemon answers to, whatever else is configured. */
export const LOOPBACK_HOST_NAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** What the guard is built from. */
export interface HostGuardOptions {
  /** The address the server binds (`[daemon].host`, or `loom start --host`). */
  bindHost: string;
  /** `[http].allowed_hosts`: more names to answer. */
  allowedHosts: readonly string[];
  /** `[http].allowed_origins`: more browser origins that may call. */
  allowedOrigins: readonly string[];
  /**
   * Whether any API key is configured. Without one every loopback client is the owner, so the
   * names are restricted on every bind (see {@link createHostGuard}).
   */
  keyed: boolean;
}

/** The host name of a `Host` header value (`evil.example:4200` → `evil.example`, `[::1]:4200` → `[::1]`), lower-cased. */
function hostNameOf(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) {
    const end = lower.indexOf(']');
    return end < 0 ? lower : lower.slice(0, end + 1);
  }
  const colon = lower.indexOf(':');
  const name = colon < 0 ? lower : lower.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** The name a client sends as `Host` for the bound address (`::` → `[::]`), lower-cased. */
function bindNameOf(bindHost: string): string {
  const lower = bindHost.trim().toLowerCase();
  return lower.includes(':') && !lower.startsWith('[') ? `[${lower}]` : hostNameOf(lower);
}

/** The headers reverse proxies and CDNs add to say whom and what they forward for. */
const FORWARDING_HEADERS: readonly string[] = [
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
  'via',
  'cf-connecting-ip',
  'true-client-ip',
];

/**
 * The check of why a request looks forwarded by a proxy (undefined when it does not): it carries a forwarding header, or asks
 * for an `allowed_hosts` name that is not a loopback one (the name a proxy serves the daemon
 * under). A proxy on this machine reaches the daemon from a loopback address, so without it a
 * daemon with no key would take every client the proxy serves for the local owner. A safety net,
 * not a guarantee: a proxy that adds none of these and passes a loopback Host (or the client's,
 * which can be one) is not seen, which is why a daemon behind a proxy needs a key.
 */
export function createProxySign(allowedHosts: readonly string[]): (header: (name: string) => string | undefined) => string | undefined {
  // The names a proxy would serve the daemon under, read once.
  const proxied = new Set(allowedHosts.map(hostNameOf).filter((name) => !LOOPBACK_HOST_NAMES.includes(name) && !name.endsWith('.localhost')));
  return (header) => {
    const forwarding = FORWARDING_HEADERS.find((name) => header(name) !== undefined);
    if (forwarding !== undefined) return `it carries the header ${forwarding}`;
    const host = header('host');
    const name = host === undefined ? undefined : hostNameOf(host);
    return name !== undefined && proxied.has(name) ? `it asks for "${name}", a name of [http].allowed_hosts` : undefined;
  };
}

/**
 * Refuses requests a web page could have sent to a daemon it should not reach (403, before
 * anything else is looked at):
 *
 * - **Host.** Only `localhost`, `127.0.0.1` and `[::1]` (any port), the bound address itself (the
 *   daemon's own URL, which the CLI uses) and the `allowed_hosts` are answered: a page whose own
 *   name was rebound to 127.0.0.1 sends its own name. This holds on every bind while no API key
 *   is configured, since every loopback client is then the owner and a browser on this machine
 *   is such a client. With keys on a non-loopback bind, any name is answered unless
 *   `allowed_hosts` lists some: the key, which a rebinding page does not have, decides.
 * - **Origin.** A request that carries `Origin` (browsers send it on cross-site and non-GET
 *   requests) must come from the daemon's own origin (`http(s)://` + the request's `Host`) or an
 *   `allowed_origins` entry; `Origin: null` (sandboxed frames, files) is refused. Clients that are
 *   not browsers send no `Origin` and are unaffected.
 */
export function createHostGuard(options: HostGuardOptions): MiddlewareHandler {
  // Loopback names and the bound address are always safe: a rebinding page sends its own name, never these.
  const allowed = new Set([...LOOPBACK_HOST_NAMES, bindNameOf(options.bindHost), ...options.allowedHosts.map(hostNameOf)]);
  const restricted = isLoopbackBind(options.bindHost) || options.allowedHosts.length > 0 || !options.keyed;
  const origins = new Set(options.allowedOrigins.map((origin) => new URL(origin).origin));

  return async (c, next) => {
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    const name = hostNameOf(host);
    if (restricted && !allowed.has(name)) {
      throw new HttpRequestError(
        'HOST_NOT_ALLOWED',
        `refusing a request for host "${host}": this daemon answers only ${[...allowed].map((entry) => `"${entry}"`).join(', ')} (a web page that points its own name at this machine sends its own name); to serve this name, add "${name}" to [http].allowed_hosts in config.toml`,
        { details: { header: 'Host', value: host } },
      );
    }
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      const own = [`http://${host}`, `https://${host}`].map((text) => URL.parse(text)?.origin);
      const given = origin === 'null' ? undefined : URL.parse(origin)?.origin;
      if (given === undefined || (!own.includes(given) && !origins.has(given))) {
        throw new HttpRequestError(
          'ORIGIN_NOT_ALLOWED',
          `refusing a request from the page at origin "${origin}": a browser may call this daemon only from its own pages (http://${host}); to allow that site, add "${origin}" to [http].allowed_origins in config.toml`,
          { details: { header: 'Origin', value: origin } },
        );
      }
    }
    await next();
  };
}
