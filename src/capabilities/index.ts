/**
 * Capabilities: what an agent may do (spec/01, "Capabilities System"). Deny by default; one
 * glob matcher; a child agent never holds more than its parent.
 */
export { CAPABILITY_KINDS, CapabilitySchema } from './capability.ts';
export type { Capability, CapabilityKind, CapabilityOfKind } from './capability.ts';
export { isGranted } from './check.ts';
export { capabilitiesFromManifest, describeCapability, MANIFEST_KEY_BY_KIND } from './from-manifest.ts';
export { tokenCap as tokenCapOf } from './limits.ts';
export { matchesPattern, patternCovers } from './pattern.ts';
export { findEscalations, validateInheritance } from './validate-inheritance.ts';
