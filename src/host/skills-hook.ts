import type { Logger } from '../contracts/index.ts';
import type { AgentLifecycleHook, OfferedSkills } from '../kernel/index.ts';

/**
 * A lifecycle hook that tells the daemon's log, when an agent starts running (spawn, update,
 * resume, boot), of each skill its manifest's `skills` names that it cannot be offered: not
 * installed (where Loom looked, and how to install it), ambiguous or unreadable. The agent runs
 * without those. At info, where the event-log agent reads: the spawn and update doors give the
 * same words as warnings to whoever spawned it, and a CLI run would print them twice.
 */
export function createSkillsHook(skills: (allowlist: readonly string[]) => Promise<OfferedSkills>, logger: Logger): AgentLifecycleHook {
  return {
    name: 'skills',
    start: async (agent) => {
      // An empty list names nothing that could be missing; reading every skill for each agent at boot would cost start-up.
      if (agent.manifest.skills.length === 0) return;
      const { problems } = await skills(agent.manifest.skills);
      for (const problem of problems) logger.info({ agentId: agent.id, agent: agent.name, code: 'SKILL_NOT_OFFERED' }, `agent "${agent.name}": ${problem}`);
    },
    stop: () => undefined,
  };
}
