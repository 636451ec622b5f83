/** Agent manifests: the schema, and loading from TOML or JSON with clear errors. */
export { checkManifestText } from './check-manifest-text.ts';
export type { ManifestCheck, ManifestIssue } from './check-manifest-text.ts';
export { codeModuleOf, codeSettingsOf, resolveModulePath } from './code-module.ts';
export type { CodeModuleRef } from './code-module.ts';
export { hoistMisplacedKeys } from './hoist-misplaced-keys.ts';
export { withoutRetiredKeys } from './retired-keys.ts';
export { detectManifestFormat, loadManifestFile, MAX_MANIFEST_BYTES, parseManifest } from './load-manifest.ts';
export type { LoadedManifest, ManifestFormat, ParseManifestOptions } from './load-manifest.ts';
export {
  AgentNameSchema,
  BUILTIN_MODULES,
  ChainOfThoughtSchema,
  CodeSchema,
  DEFAULT_CODE_SETTINGS,
  CompactionSchema,
  DelegateSchema,
  DEFAULT_INTERVAL_SECONDS,
  EmergentSchema,
  FILE_TRIGGER_EVENTS,
  LIFECYCLE_TRIGGER_EVENTS,
  MANIFEST_KEYS,
  ManifestCapabilitiesSchema,
  ManifestSchema,
  ModelConfigSchema,
  MODEL_PROVIDERS,
  ModelTargetSchema,
  namedModel,
  NamedModelConfigSchema,
  PRIORITIES,
  SANDBOX_APIS,
  SCHEDULE_MODES,
  CATCH_UP_POLICIES,
  TOOL_PROFILES,
  TRIGGER_EVENTS,
  WorkflowSchema,
} from './schema.ts';
export type { CodeSettings, EmergentSettings, Manifest, ManifestCapabilities, ManifestInput, ModelConfig } from './schema.ts';
