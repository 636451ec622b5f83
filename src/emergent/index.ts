/** Forged tools (spec/02): agents build tools at run time, composed or sandboxed, tested, judged, promoted through tiers. */
export { checkSandboxCode, formatCodeProblems } from './check-code.ts';
export type { SandboxApi } from './check-code.ts';
export { createEmergentEngine, forgedToolNotFound } from './emergent-engine.ts';
export type { EmergentEngine, EmergentEngineOptions } from './emergent-engine.ts';
export { registeredOrThrow } from './forged-tool-view.ts';
export type { ForgedToolView, ForgeOutcome, PromotionResult } from './forged-tool-view.ts';
export { fetchDomainCovers } from './fetch-domain.ts';
export { ForgeRequestSchema } from './forge-request.ts';
export type { ForgedToolEvent } from './forged-tool-events.ts';
export { VerdictSchema } from './judge.ts';
export type { JudgeRole } from './judge.ts';
export { compileSandboxProgram } from './sandbox.ts';
export type { SandboxedProgram } from './sandbox.ts';
