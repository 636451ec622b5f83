import type { Capability, Clock, Logger } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { aroundModelCalls, type ModelResolver, withCallTimeLimit } from '../models/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { UnheldAgent } from './agent-restorer.ts';
import type { Budget, BudgetLedger } from './budget-ledger.ts';
import { type Cap, lineageOf } from './lifetime-spend.ts';
import type { PriorityGate } from './priority-gate.ts';
import type { UnloggedSpend } from './shared-totals.ts';

/**
 * The limits an agent's manifest puts on each of its model calls, beyond the hourly quota: how
 * long one call may take, what the agent may spend in its life, and its place in the queue for
 * the daemon's model-call slots.
 */

/**
 * `resolver` whose calls each hold one of `gate`'s slots while they run (a stream until it ends),
 * waiting for it by the agent's `priority`. Without a gate (no `[models].max_concurrent_calls`),
 * `resolver` as it is.
 */
export function slottedResolver(resolver: ModelResolver, manifest: Manifest, gate: PriorityGate | undefined, logger: Logger): ModelResolver {
  if (gate === undefined) return resolver;
  return aroundModelCalls(resolver, async (_target, options) => {
    if (gate.full)
      logger.debug(
        { priority: manifest.priority, waiting: gate.waiting + 1 },
        `a model call of agent "${manifest.name}" waits for a slot ([models].max_concurrent_calls), as ${manifest.priority} priority`,
      );
    return { options, end: await gate.acquire(manifest.priority, options.abortSignal) };
  });
}

/**
 * `resolver` with the agent's per-call time limit, when its manifest sets one:
 * `[chain_of_thought].network_timeout_seconds` holds each model call of a chain-of-thought agent
 * (assessing, planning, each step, synthesizing) on `clock`. Otherwise `resolver` as it is.
 */
export function timeLimitedResolver(resolver: ModelResolver, manifest: Manifest, clock: Clock): ModelResolver {
  const seconds = manifest.chain_of_thought?.network_timeout_seconds;
  if (seconds === undefined) return resolver;
  return withCallTimeLimit(resolver, { clock, timeoutMs: seconds * 1000, setting: '[chain_of_thought].network_timeout_seconds' });
}

/**
 * The lifetime spending caps a call of `entry` draws from: its own and each of its ancestors'
 * (`entry.ancestors`, fixed at its spawn), where the agent is granted `econ_spend` (the least
 * grant, if several; `granted` answers undefined for an agent this kernel does not hold), as one
 * budget whose families' totals are read together (see `LifetimeSpend.budget`). An ancestor's cap
 * covers what every agent under it spends. Of an ancestor not held, the cap is read from its
 * stored record (`unheld`, when its manifest did not validate): none there is no cap; one that does
 * not read, or an ancestor not known here at all, refuses the call (see `LifetimeSpend.unknown`),
 * before any cap is read: no wait lets the call through. What the calls spend counts in `work`
 * until it is written (see `LifetimeSpend.budget`).
 */
export function lifetimeBudgets(
  ledger: BudgetLedger,
  entry: Pick<AgentEntry, 'id' | 'name' | 'ancestors'>,
  granted: (agentId: string) => readonly Capability[] | undefined,
  unheld: (agentId: string) => UnheldAgent | undefined,
  work: UnloggedSpend,
): Budget[] {
  const { lifetime } = ledger;
  if (lifetime === undefined) return [];
  const line = [entry, ...entry.ancestors];
  const unknown: Budget[] = [];
  const caps: Cap[] = [];
  line.forEach((agent, index) => {
    // The caller's own grants: it is held while its turn runs.
    const held = index === 0 ? (granted(agent.id) ?? []) : granted(agent.id);
    let maxUsd: number[];
    if (held === undefined) {
      const stored = unheld(agent.id);
      if (stored === undefined || stored.cap === null) {
        unknown.push(lifetime.unknown(agent, entry.name, stored));
        return;
      }
      maxUsd = stored.cap === undefined ? [] : [stored.cap];
    } else {
      maxUsd = held.flatMap((capability) => (capability.kind === 'econ_spend' ? [capability.max_usd] : []));
    }
    if (maxUsd.length > 0) caps.push({ id: agent.id, name: agent.name, descendants: lineageOf(line.slice(index)), maxUsd: Math.min(...maxUsd) });
  });
  return caps.length === 0 ? unknown : [...unknown, lifetime.budget(caps, entry.name, work)];
}
