import type { ToolResult } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';

/** An agent's `[schedule.check]`: the tool call made before each scheduled wake-up. */
export type ScheduleCheck = NonNullable<Manifest['schedule']['check']>;

/** What a check found: the hash of its result, or why it could not run (refused by a gate, or the tool failed). */
export type CheckOutcome = { ok: true; hash: string } | { ok: false; reason: string };

/**
 * Runs the check through `runTool` (the tool runner, as the agent: its capability gates, approvals
 * and limits apply, deny by default) and hashes what the tool answered (its text and structured
 * output) with SHA-256 (Web Crypto), so only the hash is kept. `label` names the check in a
 * failure's reason (a package heartbeat's is its binding's `trigger.check`).
 */
export async function runScheduleCheck(
  check: ScheduleCheck,
  runTool: (tool: string, input: unknown) => Promise<ToolResult>,
  label = '[schedule.check]',
): Promise<CheckOutcome> {
  const result = await runTool(check.tool, check.input);
  if (result.isError === true) return { ok: false, reason: `its ${label} (${check.tool}) failed, and the model was not called: ${result.text}` };
  const bytes = new TextEncoder().encode(JSON.stringify([result.text, result.structured ?? null]));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return { ok: true, hash: `sha256:${Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')}` };
}
