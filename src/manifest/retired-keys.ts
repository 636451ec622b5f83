import { FILE_TRIGGER_EVENTS, SKILL_ENTRY_PATTERN, TRIGGER_EVENTS } from './schema.ts';

/** `[capabilities]` keys the seed grants that Loom once took and ignored, and now refuses at load. */
const RETIRED_GRANTS = ['net_listen', 'ofp_discover', 'ofp_connect', 'ofp_advertise', 'econ_earn', 'econ_transfer'] as const;

/** A stored manifest with what a newer Loom refuses but an older one stored (and never acted on) taken out. */
export interface RetiredKeysDropped {
  manifest: Record<string, unknown>;
  /** What was taken out, each as `field: why` for the daemon's log; empty when nothing was. */
  dropped: string[];
}

/** What the log says of a `proactive` schedule left with no trigger that fires. */
const PROACTIVE_LEFT_BARE = 'schedule.mode: "proactive" with no trigger that fires, so "reactive" (answering messages) as it always was';

const isTable = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Takes out of a manifest stored by an earlier Loom what this one refuses at load but the earlier
 * one accepted and did nothing with (decision 0047): the peer-to-peer, payment and listening grants,
 * triggers on events that never fired (an unknown event, `agent_message`, a file event with no
 * pattern), and a `proactive` schedule left with no trigger, which is `reactive` in all it ever did;
 * and `skills` entries that name no skill (the list was inert before decision 0063: a name that
 * cannot be a skill's offered nothing then, and cannot be installed now).
 * The agent then runs exactly as it did, instead of not being restored at all. A manifest given at
 * spawn or update is never passed through this: there, those keys are refused with their reason.
 *
 * @example
 * ```ts
 * withoutRetiredKeys({ name: 'a', capabilities: { tools: ['*'], net_listen: ['0.0.0.0:80'] } });
 * // { manifest: { name: 'a', capabilities: { tools: ['*'] } }, dropped: ['capabilities.net_listen: a grant Loom never honoured'] }
 * ```
 */
export function withoutRetiredKeys(stored: Record<string, unknown>): RetiredKeysDropped {
  const dropped: string[] = [];
  let manifest = stored;
  const capabilities = stored['capabilities'];
  if (isTable(capabilities) && RETIRED_GRANTS.some((key) => key in capabilities)) {
    const kept = { ...capabilities };
    for (const key of RETIRED_GRANTS) {
      if (!(key in kept)) continue;
      delete kept[key];
      dropped.push(`capabilities.${key}: a grant Loom never honoured`);
    }
    manifest = { ...manifest, capabilities: kept };
  }
  const schedule = stored['schedule'];
  if (isTable(schedule) && Array.isArray(schedule['triggers'])) {
    const triggers = schedule['triggers'] as unknown[];
    const fired = triggers.filter((trigger, index) => {
      const event = isTable(trigger) ? trigger['event'] : undefined;
      const runs =
        typeof event === 'string' &&
        (TRIGGER_EVENTS as readonly string[]).includes(event) &&
        !((FILE_TRIGGER_EVENTS as readonly string[]).includes(event) && isTable(trigger) && trigger['pattern'] === undefined);
      if (!runs)
        dropped.push(
          `schedule.triggers[${index}]: a trigger that never fired (event ${JSON.stringify(event)}${typeof event === 'string' && event.startsWith('file_') ? ' with no pattern' : ''})`,
        );
      return runs;
    });
    if (fired.length !== triggers.length) {
      const proactiveLeftBare = schedule['mode'] === 'proactive' && fired.length === 0;
      if (proactiveLeftBare) dropped.push(PROACTIVE_LEFT_BARE);
      const { triggers: _dropped, ...rest } = schedule;
      manifest = { ...manifest, schedule: proactiveLeftBare ? { ...rest, mode: 'reactive' } : fired.length === 0 ? rest : { ...rest, triggers: fired } };
    }
  } else if (isTable(schedule) && schedule['mode'] === 'proactive' && schedule['triggers'] === undefined) {
    dropped.push(PROACTIVE_LEFT_BARE);
    manifest = { ...manifest, schedule: { ...schedule, mode: 'reactive' } };
  }
  const skills = stored['skills'];
  if (Array.isArray(skills) && skills.some((entry) => typeof entry !== 'string' || !SKILL_ENTRY_PATTERN.test(entry))) {
    const kept = skills.filter((entry, index) => {
      const named = typeof entry === 'string' && SKILL_ENTRY_PATTERN.test(entry);
      if (!named) dropped.push(`skills[${index}]: ${JSON.stringify(entry)} names no skill (expected "name" or "@org/skills/name[@version]")`);
      return named;
    });
    manifest = { ...manifest, skills: kept };
  }
  return { manifest, dropped };
}
