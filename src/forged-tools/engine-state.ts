import type { ForgedToolRecord, JsonObject, Logger, Tool } from '../contracts/index.ts';
import { LoomError, UsageError } from '../errors/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import type { SchemaCheck } from '../validation/index.ts';
import type { EmergentEngineOptions } from './engine-options.ts';
import type { ForgeRequest } from './forge-request.ts';
import type { ForgedToolEvent } from './forged-tool-events.ts';
import type { SandboxedProgram, SandboxPool } from './sandbox.ts';

/** A tool being built or tested: its record, its checks, its program (compiled on first use). */
export interface Candidate {
  record: ForgedToolRecord;
  request: ForgeRequest;
  checkOutput: SchemaCheck | undefined;
  program: SandboxedProgram | undefined;
}

/** A tool the engine offers, with its two faces: to its own agent, and to others (shared). */
export interface LiveTool extends Candidate {
  /** Successful calls at the last automatic promotion attempt. */
  promotionTriedAt: number;
  own: Tool<never>;
  other: Tool<never>;
}

/**
 * What every part of the engine works over (forging, calls, promotion, the stored tools): what it
 * was built from, and the tools it holds. Built once by `createEmergentEngine`; each part takes it
 * explicitly rather than sharing a closure.
 */
export interface EngineState {
  options: EmergentEngineOptions;
  /** The engine's own logger (`component: emergent`). */
  logger: Logger;
  /** The tools offered here, by id. */
  live: Map<string, LiveTool>;
  /** Sandbox source kept in memory only (its agent does not persist it), by tool id. */
  memorySource: Map<string, string>;
  /** Where this engine's isolates live: a sandbox process of its own, ended with it (`close`). */
  sandboxPool: SandboxPool;
  /** The programs compiled here (those disposed since are dropped at the next compile): offered tools' and those being tested for a forge. */
  programs: Set<SandboxedProgram>;
  /** Aborted by `close`: forges under way stop (a judge's call too), and no call waits on a sandbox. */
  closing: AbortController;
}

/** The tool an event is about: whose it is, its name, its id (none for a refused forge). */
export type EventSubject = Pick<ForgedToolRecord, 'agentId' | 'agentName' | 'name'> & { id: string | null };

/** What happened to an event's tool, as the audit log records it (see {@link ForgedToolEvent}). */
export interface EventOutcome {
  type: ForgedToolEvent['type'];
  outcome: string;
  reason: string | null;
  provenance: JsonObject;
}

/** The error for an id no forged tool has, or one the asker may not see: the same words, so neither tells the other apart. */
export function forgedToolNotFound(id: string): LoomError {
  return new LoomError('FORGED_TOOL_NOT_FOUND', 'user', `no forged tool has the id "${id}"; list them with \`loom tools list\``);
}

/** Records what happened to `subject` in the audit log, and tells subscribers. */
export function publishEvent(state: EngineState, subject: EventSubject, what: EventOutcome): Promise<void> {
  const { type, outcome, reason, provenance } = what;
  return state.options.publish({
    type,
    at: state.options.clock.now(),
    agentId: subject.agentId,
    name: subject.agentName,
    tool: subject.name,
    toolId: subject.id,
    outcome,
    reason,
    provenance,
  });
}

/** Who did something to a tool, and the tool as it was then: an event's provenance. */
export function provenanceOf(record: ForgedToolRecord, by: string): JsonObject {
  return { by, origin: record.origin, mode: record.mode, codeHash: record.codeHash, tier: record.tier };
}

/** The settings a tool runs under: its agent's live ones (none once the agent is gone). */
export function settingsOf(state: EngineState, record: ForgedToolRecord): EmergentSettings | undefined {
  return state.options.agent(record.agentId)?.emergent;
}

/** Stores `record` as changed now. */
export async function save(state: EngineState, record: ForgedToolRecord): Promise<void> {
  record.updatedAt = state.options.clock.now();
  await state.options.store.forgedTools.put(record);
}

/** Stops offering a tool here: its program is released, its in-memory source forgotten. */
export function retireLive(state: EngineState, tool: LiveTool): void {
  tool.program?.dispose();
  state.live.delete(tool.record.id);
  state.memorySource.delete(tool.record.id);
}

/** How many active session tools the agent holds (what [emergent].max_session_tools bounds). */
export function sessionToolCount(state: EngineState, agentId: string): number {
  return [...state.live.values()].filter((tool) => tool.record.agentId === agentId && tool.record.tier === 'session' && tool.record.status === 'active').length;
}

/**
 * The tool of an id, or of a unique prefix of four characters or more: the live record when the
 * tool is offered here (the one calls and promotions change), else the stored one.
 * @throws {UsageError} for an ambiguous prefix; {LoomError} `FORGED_TOOL_NOT_FOUND` for none.
 */
export async function findTool(state: EngineState, id: string): Promise<ForgedToolRecord> {
  const { live, options } = state;
  const exact = live.get(id)?.record ?? (await options.store.forgedTools.get(id));
  if (exact !== undefined) return exact;
  const matches = (await options.store.forgedTools.list()).filter((record) => record.id.startsWith(id));
  const [match] = matches;
  // The live record is the one calls and promotions change.
  if (matches.length === 1 && match !== undefined && id.length >= 4) return live.get(match.id)?.record ?? match;
  if (matches.length > 1) throw new UsageError(`forged tool id "${id}" is ambiguous: it starts ${matches.length} ids; give more of it`);
  throw forgedToolNotFound(id);
}

/**
 * The tool `record` is, as offered here.
 * @throws {LoomError} `FORGED_TOOL_INACTIVE` when it is not offered (demoted, retired, or another node's).
 */
export function liveOf(state: EngineState, record: ForgedToolRecord): LiveTool {
  const tool = state.live.get(record.id);
  if (tool === undefined)
    throw new LoomError(
      'FORGED_TOOL_INACTIVE',
      'user',
      `forged tool "${record.name}" (${record.id}) is ${record.status}${record.statusReason === null ? '' : `: ${record.statusReason}`}`,
    );
  return tool;
}
