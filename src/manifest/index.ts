/** Agent manifests: the schema, and loading from TOML or JSON with clear errors. */
export { capabilitiesFromManifest } from './capabilities-from-manifest.ts';
export { checkManifestText } from './check-manifest-text.ts';
export type { ManifestIssue } from './check-manifest-text.ts';
export { codeModuleOf, codeSettingsOf } from './code-module.ts';
export { withoutRetiredKeys } from './retired-keys.ts';
export { detectManifestFormat, loadManifestFile, parseManifest } from './load-manifest.ts';
export type { LoadedManifest, ManifestFormat, ParseManifestOptions } from './load-manifest.ts';
export {
  ChainOfThoughtSchema,
  DEFAULT_CODE_SETTINGS,
  manifestDefaults,
  DelegateSchema,
  DEFAULT_INTERVAL_SECONDS,
  FILE_TRIGGER_EVENTS,
  LIFECYCLE_TRIGGER_EVENTS,
  ManifestCapabilitiesSchema,
  ManifestSchema,
  ModelConfigSchema,
  MODEL_PROVIDERS,
  ModelTargetSchema,
  namedModel,
  NamedModelConfigSchema,
  PRIORITIES,
  SANDBOX_APIS,
  ScheduleCheckSchema,
  CATCH_UP_POLICIES,
  TRIGGER_EVENTS,
  WorkflowSchema,
} from './schema.ts';
export type { EmergentSettings, Manifest, ManifestCapabilities, ManifestInput, ModelConfig } from './schema.ts';
