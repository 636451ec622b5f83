import { ConfigError } from '../errors/index.ts';
import { type Config, isPostgresUrl, POSTGRES_URL_EXPECTED } from './config-schema.ts';

/** Where the PostgreSQL URL of the store came from. */
export type StoreUrlSource = 'LOOM_DATABASE_URL' | '[store] url';

/**
 * The PostgreSQL database the store lives in, if one is configured: `LOOM_DATABASE_URL` from the
 * environment when set (it wins, so a deployment can keep the password out of `config.toml`),
 * else `[store] url`. Undefined means the embedded SQLite file.
 *
 * @throws {ConfigError} when `LOOM_DATABASE_URL` is set but is not a PostgreSQL URL (the message
 *   never repeats the value: it may hold a password).
 */
export function resolveStoreUrl(config: Config, env: Readonly<Record<string, string | undefined>>): { url: string; from: StoreUrlSource } | undefined {
  const fromEnv = env['LOOM_DATABASE_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!isPostgresUrl(fromEnv))
      throw new ConfigError(`cannot use LOOM_DATABASE_URL: ${POSTGRES_URL_EXPECTED} (the value is not shown: it may hold a password)`);
    return { url: fromEnv, from: 'LOOM_DATABASE_URL' };
  }
  return config.store.url === undefined ? undefined : { url: config.store.url, from: '[store] url' };
}
