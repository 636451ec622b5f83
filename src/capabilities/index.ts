/**
 * Capabilities: what an agent may do (spec/01, "Capabilities System"). Deny by default; one
 * glob matcher; a child agent never holds more than its parent.
 */
export { CAPABILITY_KINDS, CapabilitySchema } from './capability.ts';
export type { Capability, CapabilityKind } from './capability.ts';
export { isGranted } from './check.ts';
export { describeCapability, MANIFEST_KEY_BY_KIND } from './manifest-words.ts';
export { tokenCap as tokenCapOf } from './limits.ts';
export { matchesPattern, patternCovers } from './pattern.ts';
export { findEscalations, validateInheritance } from './validate-inheritance.ts';
export { filePatternCovers, normalizeFilePath } from './file-path.ts';
export { globDirectory } from './glob-directory.ts';
export { TOOL_PROFILE_TOOLS, TOOL_PROFILES, toolsOutsideProfile } from './tool-profiles.ts';
export type { ToolProfile } from './tool-profiles.ts';
export type { PatternCapabilityKind } from './capability.ts';
export { patternProblem } from './pattern-problem.ts';
export { matchesShellCommand, shellPatternCovers } from './shell-pattern.ts';
export { formatCommandLine, splitShellWords } from './shell-words.ts';
