/** Forged tools (spec/02): agents build tools at run time, composed or sandboxed, tested, judged, promoted through tiers. */
export { checkSandboxCode, formatCodeProblems } from './check-code.ts';
export type { CodeProblem, SandboxApi } from './check-code.ts';
export { createEmergentEngine, FORGE_TOOL_NAME, forgedToolNotFound, MAX_SANDBOX_OUTPUT_BYTES } from './emergent-engine.ts';
export type { EmergentEngine, EmergentEngineOptions, ForgingAgent } from './emergent-engine.ts';
export { registeredOrThrow, toForgedToolView } from './forged-tool-view.ts';
export type { ForgedToolView, ForgeOutcome, PromotionResult } from './forged-tool-view.ts';
export { fetchDomainCovers } from './fetch-domain.ts';
export { ForgeRequestSchema } from './forge-request.ts';
export type { ForgeRequest } from './forge-request.ts';
export type { ForgedToolEvent } from './forged-tool-events.ts';
export { judgeDocument, judgeSystemPrompt, VerdictSchema, withoutComments } from './judge.ts';
export type { JudgeRole, Verdict } from './judge.ts';
export { compileSandboxProgram } from './sandbox.ts';
export type { SandboxBridges, SandboxedProgram, SandboxLimits, SandboxOutcome } from './sandbox.ts';
export { EXPORT_SCHEMA, exportDocument, parseExport } from './tool-export.ts';
