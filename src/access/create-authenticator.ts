import { createHash, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../contracts/index.ts';
import { type Config, LOCAL_PRINCIPAL_NAME, LOOM_API_KEY_NAME } from '../config/index.ts';
import { AccessDeniedError, UnauthorizedError } from '../errors/index.ts';
import { isLoopbackAddress } from './is-loopback-address.ts';

/** What a request presents: its headers and the client's address. */
export interface Credentials {
  authorization: string | undefined;
  apiKey: string | undefined;
  address: string;
  /**
   * Why the request looks forwarded by a reverse proxy (which reaches the daemon from a loopback
   * address), or undefined: with no key configured such a request is not the local owner.
   */
  proxied?: string | undefined;
}

/** Decides who a request comes from. */
export interface Authenticator {
  /** Whether any API key is configured (otherwise only loopback clients are served). */
  readonly keyed: boolean;
  /**
   * The principal of a request; undefined for an anonymous request to a public route.
   * @throws {UnauthorizedError} for a missing or wrong key; {AccessDeniedError} for a
   *   non-loopback client, or one a proxy forwarded, when no key is configured.
   */
  authenticate(credentials: Credentials, options: { isPublic: boolean }): Principal | undefined;
}

/** The person at this machine when no key is configured (the local CLI, a loopback client): the owner. */
export const LOCAL_OWNER: Principal = Object.freeze({ name: LOCAL_PRINCIPAL_NAME, role: 'owner', agents: Object.freeze(['*']) });

interface StoredKey extends Principal {
  digest: Buffer;
}

const digestOf = (secret: string): Buffer => createHash('sha256').update(secret, 'utf8').digest();

/**
 * Builds the authenticator from `[[auth.keys]]` (each key's secret read from its `key_env`;
 * a key whose variable is unset or empty is skipped) and `LOOM_API_KEY` (an owner key).
 * Keys are compared as SHA-256 digests with `timingSafeEqual`, against every key, so the time
 * taken says nothing about which key or how much of it matched.
 */
export function createAuthenticator(config: Config, env: Readonly<Record<string, string | undefined>>): Authenticator {
  const keys: StoredKey[] = [];
  for (const key of config.auth.keys) {
    const secret = env[key.key_env];
    if (secret !== undefined && secret !== '') keys.push({ name: key.name, role: key.role, agents: key.agents, digest: digestOf(secret) });
  }
  const ownerSecret = env['LOOM_API_KEY'];
  if (ownerSecret !== undefined && ownerSecret !== '') keys.push({ name: LOOM_API_KEY_NAME, role: 'owner', agents: ['*'], digest: digestOf(ownerSecret) });

  const find = (secret: string): StoredKey | undefined => {
    const digest = digestOf(secret);
    let found: StoredKey | undefined;
    for (const key of keys) {
      if (timingSafeEqual(digest, key.digest) && found === undefined) found = key;
    }
    return found;
  };

  return {
    keyed: keys.length > 0,
    authenticate(credentials, options) {
      if (keys.length === 0) {
        if (!isLoopbackAddress(credentials.address)) {
          throw new AccessDeniedError(
            `refusing a request from "${credentials.address || 'an unknown address'}": with no API key configured only loopback clients are served; set LOOM_API_KEY or add [[auth.keys]] to config.toml`,
          );
        }
        if (credentials.proxied !== undefined) {
          // A public route (health, webhooks, the agent card) is open to anyone, as anywhere.
          if (options.isPublic) return undefined;
          throw new AccessDeniedError(
            `refusing a request that came through a proxy (${credentials.proxied}): with no API key configured, only clients on this machine are served, as the owner, and a proxy on this machine would make every client it serves one; set LOOM_API_KEY or add [[auth.keys]] to config.toml`,
          );
        }
        return LOCAL_OWNER;
      }
      const bearer = credentials.authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
      const secret = bearer ?? credentials.apiKey?.trim();
      if (secret === undefined || secret === '') {
        if (options.isPublic) return undefined;
        throw new UnauthorizedError('this request needs an API key: send "Authorization: Bearer <key>" or "X-API-Key: <key>"');
      }
      const key = find(secret);
      if (key === undefined) throw new UnauthorizedError('the API key is not valid; check the key, or the environment variable the daemon reads it from');
      return { name: key.name, role: key.role, agents: key.agents };
    },
  };
}
