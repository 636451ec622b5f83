import { isAbsolute } from 'node:path/posix';
import { Cron } from 'croner';
import { filePatternCovers, globDirectory } from '../capabilities/index.ts';
import type { Capability } from '../contracts/index.ts';
import { DEFAULT_INTERVAL_SECONDS, type Manifest } from '../manifest/index.ts';
import { type ConfinementContext, realPathOf } from './confinement-context.ts';
import type { Report } from './confinement-rules.ts';

/** Part of `confineChild`: a child acts unasked only if its parent does, and no more often. */

/** How many upcoming runs of a cron expression are looked at to find its shortest gap. */
const CRON_RUNS_COMPARED = 64;

/** Scheduling modes in which an agent acts unasked at a rate its schedule sets. */
const TIMED_MODES = new Set(['continuous', 'periodic']);

/** The shortest time between two runs of a timed schedule, in seconds. */
function shortestGapSeconds(schedule: Manifest['schedule'], now: number): number {
  if (schedule.mode === 'continuous') return schedule.interval_seconds ?? 0;
  if (schedule.cron === undefined) return 0;
  const runs = new Cron(schedule.cron, { paused: true, timezone: 'UTC' }).nextRuns(CRON_RUNS_COMPARED, new Date(now));
  let gap = Number.POSITIVE_INFINITY;
  for (let index = 1; index < runs.length; index += 1) {
    gap = Math.min(gap, ((runs[index] as Date).getTime() - (runs[index - 1] as Date).getTime()) / 1000);
  }
  return gap;
}

/**
 * A child may act unasked only if its parent does, and no more often: a timed (continuous or
 * periodic) child needs a timed parent whose runs are at least as far apart; a proactive child
 * a proactive parent, and a file trigger only on files the parent may read. A continuous child
 * left at the default interval takes its parent's. A file trigger's folder is compared, and
 * pinned, by its real path, as a workspace is: a symbolic link in the parent's workspace
 * (`repo/escape -> /`) cannot have the child woken by, and told the names of, files the parent
 * may not read.
 */
export function confineSchedule(
  parent: Manifest,
  child: Manifest,
  context: ConfinementContext,
  parentCaps: readonly Capability[],
  workspaces: readonly string[],
  report: Report,
): Manifest['schedule'] {
  const mode = child.schedule.mode;
  if (mode === 'reactive') return child.schedule;
  const parentMode = parent.schedule.mode;
  if (mode === 'proactive') {
    if (parentMode !== 'proactive') {
      report('[schedule].mode', `"proactive" acts unasked, but the parent is "${parentMode}"`);
      return child.schedule;
    }
    const real = realPathOf(context);
    const folders = workspaces.map(real);
    const triggers = child.schedule.triggers.map((trigger, index) => {
      if (trigger.pattern === undefined || !trigger.event.startsWith('file_')) return trigger;
      const written = trigger.pattern;
      const folder = globDirectory(written);
      const pattern = isAbsolute(folder) ? `${real(folder)}${written.slice(folder.length)}` : written;
      const inside = folders.some((workspace) => filePatternCovers(`${workspace}/*`, pattern));
      const readable = parentCaps.some((capability) => capability.kind === 'file_read' && filePatternCovers(capability.pattern, pattern));
      if (!inside && !readable)
        report(
          `[[schedule.triggers]][${index}].pattern`,
          `${JSON.stringify(written)}${pattern === written ? '' : ` (${JSON.stringify(pattern)} through its symbolic links)`} watches files the parent may not read`,
        );
      return pattern === written ? trigger : { ...trigger, pattern };
    });
    return { ...child.schedule, triggers };
  }
  if (!TIMED_MODES.has(parentMode)) {
    report('[schedule].mode', `"${mode}" acts unasked on a timer, but the parent is "${parentMode}"`);
    return child.schedule;
  }
  const { now } = context;
  const parentGap = shortestGapSeconds(parent.schedule, now);
  if (mode === 'continuous' && child.schedule.interval_seconds !== undefined && child.schedule.interval_seconds < parentGap) {
    // Left at the default, it takes the parent's pace.
    if (child.schedule.interval_seconds === DEFAULT_INTERVAL_SECONDS && parentMode === 'continuous') return { ...child.schedule, interval_seconds: parentGap };
    report('[schedule].interval_seconds', `${child.schedule.interval_seconds} s runs more often than the parent, whose runs are ${parentGap} s apart`);
    return child.schedule;
  }
  const childGap = shortestGapSeconds(child.schedule, now);
  if (childGap < parentGap)
    report(
      '[schedule].cron',
      `${JSON.stringify(child.schedule.cron)} runs more often (every ${childGap} s at the shortest) than the parent (every ${parentGap} s)`,
    );
  return child.schedule;
}
