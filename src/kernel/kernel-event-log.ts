import type { LogBindings, Logger } from '../contracts/index.ts';
import type { KernelEvent } from './event-bus.ts';

/**
 * A kernel event as a log line: its category (`subsystem`, shown as `loom.<category>`), fields and
 * words. Every one is logged at info, failures too: what failed was warned of where it failed (the
 * fallback chain, the channel, the package run), and this line is the record of the event.
 */
export interface KernelEventLine {
  category: string;
  fields: LogBindings;
  message: string;
}

/** Codes of a turn refused by a budget rather than by access or state. */
const QUOTA_CODES: ReadonlySet<string> = new Set(['QUOTA_EXCEEDED', 'TOKEN_BUDGET_EXCEEDED', 'BUDGET_EXCEEDED']);

const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;

/**
 * The log line of a kernel event, for the daemon's log and the event-log agents that read it: who
 * did what, how it ended, and how long it took. Every event has one: a type this does not know
 * (one added since) gets a plain line under the category its name starts with (`schedule-run` →
 * `loom.schedule`), so it is never left out of the log.
 */
export function kernelEventLine(event: KernelEvent): KernelEventLine {
  const agent = `agent "${event.name}"`;
  const base = { agentId: event.agentId ?? undefined, event: event.type };
  const line = (category: string, message: string, fields: LogBindings = {}): KernelEventLine => ({ category, fields: { ...base, ...fields }, message });
  switch (event.type) {
    case 'agent-spawn':
      return line('agents', `spawned ${agent}${event.parentId === null ? '' : ' as a child'}`, { parentId: event.parentId });
    case 'agent-kill':
      return line('agents', `killed ${agent} (${event.reason === 'parent-killed' ? 'its parent was killed' : 'requested'})`, { reason: event.reason });
    case 'agent-suspend':
      return line('agents', `suspended ${agent}`);
    case 'agent-resume':
      return line('agents', `resumed ${agent}`);
    case 'agent-update':
      return line('agents', `updated the manifest of ${agent}`);
    case 'turn-finish':
      return line(
        'turns',
        `${event.kind} turn of ${agent} (via ${event.via}) finished in ${seconds(event.durationMs)}: ${event.model}, ${event.iterations} model call${event.iterations === 1 ? '' : 's'}, ${event.inputTokens + event.outputTokens} tokens, $${event.costUsd.toFixed(4)}`,
        {
          outcome: 'finished',
          durationMs: event.durationMs,
        },
      );
    case 'turn-refuse':
      return line(
        QUOTA_CODES.has(event.code) ? 'quotas' : 'turns',
        `${event.kind} turn of ${agent} (via ${event.via}) refused: ${event.code}: ${event.message}`,
        { outcome: 'refused', code: event.code, durationMs: event.durationMs },
      );
    case 'turn-cancel':
      return line('turns', `${event.kind} turn of ${agent} (via ${event.via}) cancelled after ${seconds(event.durationMs)}`, {
        outcome: 'cancelled',
        durationMs: event.durationMs,
      });
    case 'model-fail':
    case 'turn-fail':
      return line('turns', `${event.kind} turn of ${agent} (via ${event.via}) failed after ${seconds(event.durationMs)}: ${event.code}: ${event.message}`, {
        outcome: 'failed',
        code: event.code,
        durationMs: event.durationMs,
      });
    case 'tool-deny':
    case 'tool-reject':
    case 'tool-block':
    case 'tool-time-out':
      return line(
        event.reason.includes('quota') || event.reason.includes('budget') ? 'quotas' : 'tools',
        `refused tool "${event.tool}" to ${agent} (${event.outcome}): ${event.reason}`,
        { tool: event.tool, outcome: event.outcome },
      );
    case 'tool-taint':
      return line(
        'tools',
        `held tool "${event.tool}" of ${agent}: it carries text from ${event.source.origin} (by ${event.source.tool}) into ${event.sink}; ${event.action === 'refuse' ? 'refused' : 'sent for approval'}`,
        { tool: event.tool, action: event.action },
      );
    case 'tool-fail':
      return line('tools', `tool "${event.tool}" of ${agent} answered with an error after ${seconds(event.durationMs)}`, {
        tool: event.tool,
        durationMs: event.durationMs,
      });
    case 'tool-finish':
      return line('tools', `tool "${event.tool}" of ${agent} finished in ${seconds(event.durationMs)}`, { tool: event.tool, durationMs: event.durationMs });
    case 'approval-request':
      return line('approvals', `${agent} asks for approval to call "${event.tool}" (${event.approvalId})`, { tool: event.tool });
    case 'approval-decide':
      return line('approvals', `the call of "${event.tool}" by ${agent} was ${event.status} by ${event.by} (${event.approvalId})`, {
        tool: event.tool,
        status: event.status,
      });
    case 'package-fire':
      return line('scheduler', `package "${event.name}": ${event.binding} fired (${event.trigger}), run ${event.runId}`, {
        binding: event.binding,
        runId: event.runId,
      });
    case 'package-run-finish':
      return line(
        'scheduler',
        `package "${event.name}": run ${event.runId} of ${event.binding} ${event.status}${event.error === null ? '' : `: ${event.error}`}`,
        { binding: event.binding, runId: event.runId, status: event.status },
      );
    case 'package-skip':
      return line('scheduler', `package "${event.name}": skipped a fire of ${event.binding} (${event.trigger}): ${event.reason}`, { binding: event.binding });
    case 'package-miss':
      return line(
        'scheduler',
        `package "${event.name}": ${event.binding} missed ${event.count} fire${event.count === 1 ? '' : 's'} (${event.trigger}) while the daemon was down`,
        { binding: event.binding },
      );
    case 'schedule-run-finish':
      return line(
        'scheduler',
        `scheduled run of ${agent} (${event.trigger}${event.caughtUp ? ', caught up' : ''}) ${event.outcome}${event.count > 1 ? ` (${event.count} wake-ups)` : ''}${event.reason === null ? '' : `: ${event.reason}`}`,
        { runId: event.runId, outcome: event.outcome, ...(event.code === undefined ? {} : { code: event.code }) },
      );
    case 'package-install':
      return line('packages', `installed package "${event.name}" ${event.version}`);
    case 'channel-refuse':
      return line('channels', `channel "${event.channel}" refused ${event.userName ?? event.userId}: ${event.reason}`, { channel: event.channel });
    case 'channel-pair':
      return line('channels', `channel "${event.channel}" paired ${event.userName ?? event.userId}`, { channel: event.channel });
    case 'channel-reply-fail':
      return line('channels', `channel "${event.channel}" could not deliver a ${event.kind} to ${event.userId}: ${event.reason}`, { channel: event.channel });
    default: {
      const type: string = event.type;
      return line(type.split('-')[0] ?? 'kernel', `${type} of ${agent}`);
    }
  }
}

/** Event types too frequent for their own line: each is told by its turn's line. */
const QUIET: ReadonlySet<string> = new Set(['tool-finish', 'package-activity-start', 'package-activity-finish']);

/**
 * Logs every kernel event worth asking about at info, under its category (see
 * {@link kernelEventLine}): what the event-log agents read. Returns a function that stops it.
 * @example const stop = logKernelEvents(kernel.events, logger);
 */
export function logKernelEvents(events: { subscribe: (listener: (event: KernelEvent) => void) => () => unknown }, logger: Logger): () => void {
  const unsubscribe = events.subscribe((event) => {
    if (QUIET.has(event.type)) return;
    const { category, fields, message } = kernelEventLine(event);
    logger.info({ subsystem: category, ...fields }, message);
  });
  return () => {
    unsubscribe();
  };
}
