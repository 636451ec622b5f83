import type { ForgedToolRecord, ForgedToolTier, JsonObject } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { Verdict } from './judge.ts';
import type { ForgedToolView as WireForgedToolView } from '../wire/index.ts';

/** A forge's result: the tool registered, or the stage that refused it and why (returned to the agent as a tool result). */
export type ForgeOutcome =
  { ok: true; tool: ForgedToolView; verdict: Verdict } | { ok: false; stage: 'request' | 'build' | 'test' | 'judge'; reason: string; verdict?: Verdict };

/**
 * The registered tool of a forge, or a `FORGE_REFUSED` error naming the stage (and the judge's
 * verdict when it gave one): how the doors (HTTP, CLI) report a refusal.
 * @throws {LoomError} `FORGE_REFUSED`
 */
export function registeredOrThrow(outcome: ForgeOutcome): ForgedToolView {
  if (outcome.ok) return outcome.tool;
  throw new LoomError('FORGE_REFUSED', 'user', `the tool was refused at the ${outcome.stage} stage: ${outcome.reason}`, {
    details: { stage: outcome.stage, ...(outcome.verdict === undefined ? {} : { verdict: outcome.verdict }) },
  });
}

/** What `promote` did: promoted, refused (why), or waiting for a person's approval (its id). */
export type PromotionResult = { tool: ForgedToolView; outcome: 'promoted' | 'refused' | 'pending-approval'; reason: string | null; approvalId?: string };

/** A forged tool as the doors show it: src/wire's `ForgedToolView`, with its verdicts and request as the store keeps them. */
export interface ForgedToolView extends Omit<WireForgedToolView, 'verdicts' | 'request' | 'tier' | 'status'> {
  tier: ForgedToolTier;
  status: ForgedToolRecord['status'];
  verdicts: JsonObject[];
  /** The request as stored (a sandbox tool's code only when its source is persisted). */
  request: JsonObject;
}

/** A stored tool as the doors show it: its stats as rates and means. */
export function toForgedToolView(record: ForgedToolRecord): ForgedToolView {
  const { stats } = record;
  return {
    id: record.id,
    name: record.name,
    description: typeof record.request['description'] === 'string' ? record.request['description'] : '',
    agent: record.agentName,
    agentId: record.agentId,
    tier: record.tier,
    status: record.status,
    statusReason: record.statusReason,
    mode: record.mode,
    origin: record.origin,
    calls: stats.calls,
    successRate: stats.calls === 0 ? null : stats.successes / stats.calls,
    meanLatencyMs: stats.calls === 0 ? null : stats.totalMs / stats.calls,
    verdicts: record.verdicts,
    codeHash: record.codeHash,
    sourcePersisted: record.sourcePersisted,
    request: record.request,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
