import type { PackageRunRecord, ToolResult } from '../contracts/index.ts';
import { runScheduleCheck } from '../kernel/index.ts';
import type { PackageTrigger } from './package-schema.ts';

/** A heartbeat trigger's `check`: a tool call and its input. */
export type HeartbeatCheck = NonNullable<Extract<PackageTrigger, { type: 'heartbeat' }>['check']>;

/** What a heartbeat's check decided: run the binding (keeping `hash` on the run), or the run it recorded instead. */
export type HeartbeatLook = { run: true; hash: string } | { run: false; record: PackageRunRecord };

/** What {@link lookBeforeHeartbeat} needs: the package's agent's tool runner, the binding's last hash, and a way to record a run that did not start. */
export interface HeartbeatLookParts {
  /** Runs one tool call as the package's agent through the kernel's tool runner: its grants apply, deny by default; a refusal is an error result. */
  runTool(tool: string, input: unknown): Promise<ToolResult>;
  /** The hash the binding's latest completed or unchanged run kept. */
  lastHash(): Promise<string | undefined>;
  /** Records a run that called no model: `unchanged` (with the hash) or `aborted` (the check failed). */
  record(status: 'unchanged' | 'aborted', error: string | null, checkHash: string | null): Promise<PackageRunRecord>;
}

/**
 * Before a heartbeat fire of a binding whose trigger has a `check` (decision 0062, the package
 * form of decision 0049's `[schedule.check]`): runs the check as the package's agent and hashes
 * what it answered. When the hash is the one the binding's last completed or unchanged run kept,
 * the fire is recorded `unchanged` and no activity (no model) runs; when the check fails or a gate
 * refuses it, the fire is recorded `aborted` with why, the model not called. Otherwise the binding
 * runs, and its run keeps the hash once it completes (a run that did not complete is tried again
 * on the same state at the next beat).
 */
export async function lookBeforeHeartbeat(check: HeartbeatCheck, parts: HeartbeatLookParts): Promise<HeartbeatLook> {
  const checked = await runScheduleCheck(check, (tool, input) => parts.runTool(tool, input), 'trigger.check');
  if (!checked.ok) return { run: false, record: await parts.record('aborted', checked.reason, null) };
  if ((await parts.lastHash()) === checked.hash) return { run: false, record: await parts.record('unchanged', null, checked.hash) };
  return { run: true, hash: checked.hash };
}
