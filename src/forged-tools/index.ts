/** Forged tools (spec/02): agents build tools at run time, composed or sandboxed, tested, judged, promoted through tiers. */
export { checkSandboxCode, formatCodeProblems } from './check-code.ts';
export type { SandboxApi } from './check-code.ts';
export { createEmergentEngine } from './emergent-engine.ts';
export type { EmergentEngine } from './emergent-engine.ts';
export type { EmergentEngineOptions, ForgingPorts } from './engine-options.ts';
export { forgedToolNotFound } from './engine-state.ts';
export { registeredOrThrow } from './forged-tool-view.ts';
export type { ForgedToolView, ForgeOutcome, PromotionResult } from './forged-tool-view.ts';
export { fetchDomainCovers } from './fetch-domain.ts';
export { ForgeRequestSchema } from './forge-request.ts';
export type { ForgedToolEvent } from './forged-tool-events.ts';
export { VerdictSchema } from './judge.ts';
export type { JudgeRole } from './judge.ts';
export { compileSandboxProgram } from './sandbox.ts';
export type { SandboxedProgram } from './sandbox.ts';
