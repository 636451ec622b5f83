import type { Clock } from '../contracts/index.ts';
import { checkAgentModels, type ModelTarget } from '../models/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { EventBus } from './event-bus.ts';

/** How long an agent's last turn failing on its models keeps it out of orchestrators' catalogs. */
export const RECENT_FAILURE_MS = 5 * 60_000;

/** How long a model server has to answer an orchestrator's health check. */
const PROBE_TIMEOUT_MS = 1_000;

/** The last turn of an agent that failed because every model failed, while it is recent. */
export interface RecentFailure {
  message: string;
  at: number;
}

/** What the kernel remembers of each agent's last turn: whether every model failed it, lately. */
export interface RecentFailures {
  /** The agent's last turn when it ended in `model-fail` less than {@link RECENT_FAILURE_MS} ago. */
  of(agentId: string): RecentFailure | undefined;
}

/**
 * Follows the kernel's turn events: a `model-fail` (every model of the turn failed) is
 * remembered for the agent until one of its turns finishes; it counts for
 * {@link RECENT_FAILURE_MS} on `clock`, after which the agent gets another chance.
 */
export function trackRecentFailures(events: Pick<EventBus, 'subscribe'>, clock: Clock): RecentFailures {
  const failures = new Map<string, RecentFailure>();
  events.subscribe((event) => {
    if (event.type === 'model-fail') failures.set(event.agentId, { message: event.message, at: event.at });
    else if (event.type === 'turn-finish' || event.type === 'agent-kill') failures.delete(event.agentId);
  });
  return {
    of(agentId) {
      const failure = failures.get(agentId);
      return failure !== undefined && clock.now() - failure.at < RECENT_FAILURE_MS ? failure : undefined;
    },
  };
}

/** What a health check reads: the daemon's default model and keys, and the failures remembered. */
export interface HealthContext {
  defaultModel?: ModelTarget | undefined;
  env: Readonly<Record<string, string | undefined>>;
  recentFailures?: RecentFailures | undefined;
  /** Whether each model server answered, by base URL: one probe per server across a catalog. */
  probes: Map<string, Promise<boolean>>;
}

/**
 * Why an orchestrator should not hand work to an agent (spec/03's health checks), or undefined
 * when it looks able to answer: none of its models can run (no model, no key, nothing answers at
 * its server; a fallback that can run keeps it in), or its last turn failed on every model less
 * than five minutes ago.
 */
export async function unhealthyReason(agent: { id: string; manifest: Manifest }, context: HealthContext): Promise<string | undefined> {
  const problems = await checkAgentModels(agent.manifest, {
    defaultModel: context.defaultModel,
    env: context.env,
    probes: context.probes,
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  const models = 1 + agent.manifest.fallback_models.length;
  const [first] = problems;
  if (first !== undefined && new Set(problems.map((problem) => problem.field)).size >= models) return `cannot run: ${first.problem}`;
  const failure = context.recentFailures?.of(agent.id);
  if (failure !== undefined) return `its last turn failed on every model (${failure.message})`;
  return undefined;
}
