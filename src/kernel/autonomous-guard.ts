import type { Clock } from '../contracts/index.ts';
import type { ToolCallOutcome, ToolRunner } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';

/**
 * `[autonomous]`'s numbers, for agents that act unasked (continuous, periodic, proactive): each
 * scheduled wake-up is a cycle whose tool calls are capped by `max_actions_per_cycle`, and an
 * agent whose cycles take no action for `idle_timeout_seconds` is suspended.
 */

/** Whether the agent's manifest makes its scheduled wake-ups guarded cycles. */
function guarded(entry: Pick<AgentEntry, 'manifest'>): boolean {
  return entry.manifest.autonomous !== undefined && entry.manifest.schedule.mode !== 'reactive';
}

/** Tracks each guarded agent's last action, and caps the tool calls of its cycles. */
export class AutonomousGuard {
  readonly #clock: Clock;
  /** When each agent last acted (a tool call that ran), or when its first cycle here started. */
  readonly #lastAction = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * `runner` for one cycle of `entry` (a scheduled wake-up): its first `max_actions_per_cycle`
   * tool calls run as usual; the next is not run, its result says why, and the agent loop ends
   * there. An agent without `[autonomous]`, or a reactive one, gets `runner` as it is.
   */
  cycleRunner(runner: ToolRunner, entry: Pick<AgentEntry, 'id' | 'manifest'>): ToolRunner {
    const autonomous = entry.manifest.autonomous;
    if (autonomous === undefined || !guarded(entry)) return runner;
    // Idle time counts from the first cycle this daemon runs: a restart does not make an agent idle.
    if (!this.#lastAction.has(entry.id)) this.#lastAction.set(entry.id, this.#clock.now());
    const cap = autonomous.max_actions_per_cycle;
    let calls = 0;
    return {
      toolsFor: (agent, filter) => runner.toolsFor(agent, filter),
      toolbox: (options, callId, caller) => runner.toolbox(options, callId, caller),
      run: async (call, options): Promise<ToolCallOutcome> => {
        calls += 1;
        if (calls > cap) {
          const reason = `this unattended cycle made its ${cap} tool calls ([autonomous].max_actions_per_cycle = ${cap})`;
          return { result: { text: `not run: ${reason}; the cycle ends here`, isError: true }, failure: { kind: 'refused' }, breakLoop: reason };
        }
        const outcome = await runner.run(call, options);
        if (outcome.failure?.kind !== 'refused') this.#lastAction.set(entry.id, this.#clock.now());
        return outcome;
      },
    };
  }

  /**
   * After a cycle of `entry` ended: why it should be suspended, when it has taken no action for
   * longer than `idle_timeout_seconds`; undefined otherwise (or when it is not guarded).
   */
  idleReason(entry: Pick<AgentEntry, 'id' | 'manifest'>): string | undefined {
    const timeout = entry.manifest.autonomous?.idle_timeout_seconds;
    const last = this.#lastAction.get(entry.id);
    if (timeout === undefined || last === undefined || !guarded(entry)) return undefined;
    const idleMs = this.#clock.now() - last;
    if (idleMs < timeout * 1000) return undefined;
    return `idle: its unattended cycles took no action for ${Math.floor(idleMs / 1000)} s ([autonomous].idle_timeout_seconds = ${timeout})`;
  }

  /** Starts the agent's idle time again (resumed by a person), or forgets it (killed). */
  forget(agentId: string): void {
    this.#lastAction.delete(agentId);
  }
}
