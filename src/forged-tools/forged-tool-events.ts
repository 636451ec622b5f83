import type { JsonObject } from '../contracts/index.ts';

/**
 * What happens to forged tools, recorded in the audit log with provenance (spec/02): a forge
 * (registered or refused, with the verdict), a promotion or a refused one, a demotion, a tool
 * retired with its session, a sandbox fault contained (a time or memory limit, an oversized
 * output, a refused bridge call).
 */
export interface ForgedToolEvent {
  type: 'tool-forge' | 'tool-promote' | 'tool-demote' | 'tool-retire' | 'tool-sandbox-fail';
  at: number;
  /** The agent the tool belongs to (or that called it, for a sandbox fault). */
  agentId: string;
  name: string;
  tool: string;
  toolId: string | null;
  /** `registered`/`refused` for a forge; the new tier, `refused` or `pending-approval` for a promotion; the fault's kind. */
  outcome: string;
  reason: string | null;
  /** Who or what did it (`forge_tool`, `cli`, a key's name, `auto`), the origin, mode and code hash, the verdicts. */
  provenance: JsonObject;
}
