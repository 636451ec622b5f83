/** The Loom home folder and its `config.toml`. */
export {
  ChannelConfigSchema,
  ChannelPolicySchema,
  ConfigSchema,
  DEFAULT_CONFIG_TOML,
  isPostgresUrl,
  LOCAL_PRINCIPAL_NAME,
  LOOM_API_KEY_NAME,
  POSTGRES_URL_EXPECTED,
} from './config-schema.ts';
export type { ChannelConfig, Config } from './config-schema.ts';
export { ensureLoomHome, expandHome, loadConfig, loadConfigText, resolveLoomHome } from './loom-home.ts';
export type { LoomHome } from './loom-home.ts';
export { resolveStoreUrl } from './resolve-store-url.ts';
export type { StoreUrlSource } from './resolve-store-url.ts';
export { fileState, keptWhileUnchanged, statsState } from './kept-reads.ts';
