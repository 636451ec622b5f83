import type { MiddlewareHandler } from 'hono';
import { isLoopbackBind } from '../access/index.ts';
import { HttpRequestError } from './http-request-error.ts';

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

/**
 * Refuses requests a web page could have sent to a daemon it should not reach (403, before
 * anything else is looked at):
 *
 * - **Host.** On a loopback bind, only `localhost`, `127.0.0.1` and `[::1]` (any port) and the
 *   `allowed_hosts` are answered: a page whose own name was rebound to 127.0.0.1 sends its own
 *   name. On another bind, `allowed_hosts` (with the loopback names) restricts the names when
 *   it lists any.
 * - **Origin.** A request that carries `Origin` (browsers send it on cross-site and non-GET
 *   requests) must come from the daemon's own origin (`http(s)://` + the request's `Host`) or an
 *   `allowed_origins` entry; `Origin: null` (sandboxed frames, files) is refused. Clients that are
 *   not browsers send no `Origin` and are unaffected.
 */
export function createHostGuard(options: HostGuardOptions): MiddlewareHandler {
  const loopback = isLoopbackBind(options.bindHost);
  // Loopback names are always safe: a rebinding page sends its own name, never these.
  const allowed = new Set([...LOOPBACK_HOST_NAMES, ...options.allowedHosts.map(hostNameOf)]);
  const restricted = loopback || options.allowedHosts.length > 0;
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
