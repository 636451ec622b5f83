import { Cron } from 'croner';
import { z } from 'zod';
import { ScheduleCheckSchema } from '../manifest/index.ts';

/**
 * `agent.json` (spec/04 "agent.json Schema"): every field, type, default and required field of
 * the spec's tables, strict (an unknown key is an error with a did-you-mean), plus the checks
 * that need only the file itself: 5-field cron, heartbeat interval and window, time zone,
 * unique activity ids, activity skills within the package's, configurable paths that exist,
 * event sources of the package's own emits, and no emit cycle inside the package.
 */

/** The time zone value meaning "the daemon's configured time zone, else the system's". */
export const USER_LOCAL_TIMEZONE = 'user_local';

/** What an activity does when it still fails after its retries. */
export const FALLBACKS = ['NotifyOwner', 'Skip', 'Abort'] as const;

const SKILL_REFERENCE = /^@[a-z0-9][a-z0-9-]*\/skills\/[a-z0-9][a-z0-9-]*(?:@[0-9A-Za-z.+-]+)?$/;
const BINDING_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
const CLOCK_TIME = '([01]\\d|2[0-3]):([0-5]\\d)';
const WINDOW = new RegExp(`^${CLOCK_TIME}-${CLOCK_TIME}$`);

/**
 * A heartbeat interval in milliseconds: hours, minutes and seconds in that order, each optional
 * but not all ("30s", "5m", "1h", "2h30m"); undefined for anything else or zero.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (match === null || text === '') return undefined;
  const [, hours = '0', minutes = '0', seconds = '0'] = match;
  const ms = ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000;
  return ms > 0 ? ms : undefined;
}

/** A time-of-day window in minutes after midnight; `end < start` crosses midnight. */
export interface ClockWindow {
  start: number;
  end: number;
}

/** Parses "08:00-18:00" (or "22:00-06:00", across midnight); undefined for anything else or an empty window. */
export function parseWindow(text: string): ClockWindow | undefined {
  const match = WINDOW.exec(text);
  if (match === null) return undefined;
  const [, startHour, startMinute, endHour, endMinute] = match.map(Number) as [number, number, number, number, number];
  const window = { start: startHour * 60 + startMinute, end: endHour * 60 + endMinute };
  return window.start === window.end ? undefined : window;
}

/** Whether `minuteOfDay` lies in the window (start included, end excluded). */
export function inWindow(window: ClockWindow, minuteOfDay: number): boolean {
  return window.start < window.end ? minuteOfDay >= window.start && minuteOfDay < window.end : minuteOfDay >= window.start || minuteOfDay < window.end;
}

/** Why a cron expression cannot serve a schedule trigger, or undefined when it can. */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return `expected a 5-field cron expression (minute hour day-of-month month day-of-week) such as "0 8 * * 1-5", got ${fields.length} field${fields.length === 1 ? '' : 's'} in "${expression}"`;
  try {
    new Cron(expression, { paused: true });
    return undefined;
  } catch (error) {
    return `invalid cron expression "${expression}": ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Whether this runtime knows the IANA time zone. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const ScheduleTriggerSchema = z.strictObject({
  type: z.literal('schedule'),
  cron: z.string().superRefine((cron, context) => {
    const problem = cronProblem(cron);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  }),
});

const HeartbeatTriggerSchema = z.strictObject({
  type: z.literal('heartbeat'),
  interval: z.string().refine((interval) => parseDuration(interval) !== undefined, {
    error: (issue) => `expected a duration such as "30s", "5m", "1h" or "2h30m", got ${JSON.stringify(issue.input)}`,
  }),
  window: z
    .string()
    .refine((window) => parseWindow(window) !== undefined, {
      error: (issue) => `expected a time-of-day window such as "08:00-18:00" (or "22:00-06:00" across midnight), got ${JSON.stringify(issue.input)}`,
    })
    .optional(),
  // An idle heartbeat spends nothing (decision 0062): `[schedule.check]`'s shape, as agent.json writes it.
  check: ScheduleCheckSchema.optional(),
});

const EventTriggerSchema = z.strictObject({
  type: z.literal('event'),
  sources: z
    .array(z.string().regex(EVENT_NAME, { error: 'expected an event name such as "briefing.ready" or "other-package.briefing.ready"' }))
    .min(1, { error: 'expected at least one event name' }),
});

const ManualTriggerSchema = z.strictObject({ type: z.literal('manual') });

const TRIGGER_TYPES = ['schedule', 'heartbeat', 'event', 'manual'] as const;

/** `trigger`: when a binding fires. */
export const PackageTriggerSchema = z.discriminatedUnion('type', [ScheduleTriggerSchema, HeartbeatTriggerSchema, EventTriggerSchema, ManualTriggerSchema], {
  error: (issue) => {
    const type = (issue.input as { type?: unknown } | undefined)?.type;
    return `expected a trigger whose "type" is one of ${TRIGGER_TYPES.join(', ')}${type === undefined ? '' : `, got ${JSON.stringify(type)}`}`;
  },
});

/** `AgentActivity`: one step of a binding. */
export const ActivitySchema = z.strictObject({
  id: z.string().min(1, { error: 'expected a non-empty activity id' }),
  intent: z.string().min(1, { error: 'expected the goal of the activity, in words' }),
  skills: z.array(z.string()).default([]),
  mcps: z.array(z.string().min(1)).default([]),
  cmds: z.array(z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/, { error: 'expected a command name such as "git" (no path, no arguments)' })).default([]),
  model: z.string().min(1, { error: 'expected a model name such as "claude-sonnet"' }),
  steps: z.array(z.string()).default([]),
  token_budget: z.strictObject({ max: z.int().positive() }),
  on_error: z.strictObject({ retry: z.int().min(0).max(10), fallback: z.enum(FALLBACKS) }),
});

/** Path segments that would reach an object's prototype rather than its data. */
const PROTOTYPE_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

/** `WorkflowBinding`: what to run and when. */
export const BindingSchema = z.strictObject({
  trigger: PackageTriggerSchema,
  description: z.string(),
  inputs: z.record(z.string(), z.json()).default({}),
  activities: z.array(ActivitySchema).min(1, { error: 'expected at least one activity' }),
  budget: z.strictObject({ total_per_run: z.int().positive(), cost_estimate: z.string() }),
  emit: z.string().regex(EVENT_NAME, { error: 'expected an event name such as "briefing.ready"' }).optional(),
});

const AgentJsonObjectSchema = z.strictObject({
  skills: z
    .array(z.string().regex(SKILL_REFERENCE, { error: 'expected a skill reference such as "@org/skills/name" or "@org/skills/name@1.0.0"' }))
    .default([]),
  defaults: z
    .strictObject({
      timezone: z
        .string()
        .refine((zone) => zone === USER_LOCAL_TIMEZONE || isTimeZone(zone), {
          error: (issue) => `expected "${USER_LOCAL_TIMEZONE}" or an IANA time zone such as "Europe/Berlin", got ${JSON.stringify(issue.input)}`,
        })
        .default(USER_LOCAL_TIMEZONE),
      configurable: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  pricing: z.strictObject({ model: z.string().optional(), cost: z.number().nonnegative().optional() }).prefault({}),
  workflows: z.record(z.string().regex(BINDING_NAME, { error: 'expected a binding name of letters, digits, "-" and "_"' }), BindingSchema).default({}),
});

/** The skill reference without its version: `@org/skills/name`. */
export function skillWithoutVersion(reference: string): string {
  const at = reference.indexOf('@', 1);
  return at === -1 ? reference : reference.slice(0, at);
}

/** A value at a dot-path of a parsed document, or undefined when the path leads nowhere. */
export function valueAtPath(document: unknown, path: readonly string[]): unknown {
  let value: unknown = document;
  for (const segment of path) {
    // Own properties only: "__proto__.toString" names nothing in a document.
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** The own keys of `value` when it is a plain object (a parsed document's), else none. */
function ownKeysOf(value: unknown): string[] {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.keys(value) : [];
}

/** `value[key]` when `value` is an object that has `key` itself, else undefined. */
function ownValue(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

/**
 * What in a parsed `agent.json` names a binding or an input with a key every object inherits,
 * one line per key (`workflows.__proto__: …`). Read from the document as parsed, before the
 * schema: zod drops a `__proto__` key of a map without a word (an object built from it would take
 * it as its prototype), so a binding named so would never run; `constructor` and `prototype`,
 * as binding names, would be looked up where an object has them already.
 */
export function inheritedKeyProblems(document: unknown): string[] {
  const refused = (name: string, what: string, names: ReadonlySet<string>): string =>
    `${JSON.stringify(name)} cannot be ${what}: it names what every object inherits (${[...names].map((key) => `"${key}"`).join(', ')} are refused); choose another name`;
  const workflows = ownValue(document, 'workflows');
  const problems: string[] = [];
  for (const name of ownKeysOf(workflows)) {
    if (PROTOTYPE_SEGMENTS.has(name)) problems.push(`workflows.${name}: ${refused(name, 'a binding name', PROTOTYPE_SEGMENTS)}`);
    for (const input of ownKeysOf(ownValue(ownValue(workflows, name), 'inputs'))) {
      if (input === '__proto__') problems.push(`workflows.${name}.inputs.${input}: ${refused(input, 'an input name', new Set(['__proto__']))}`);
    }
  }
  return problems;
}

/** The checks of one `agent.json` that need more than one field (see the top of this file). */
function checkPackage(agent: z.output<typeof AgentJsonObjectSchema>, context: z.RefinementCtx): void {
  const skills = new Set(agent.skills.map(skillWithoutVersion));
  const emits = new Set(Object.values(agent.workflows).flatMap((binding) => (binding.emit === undefined ? [] : [binding.emit])));
  for (const [name, binding] of Object.entries(agent.workflows)) {
    const seen = new Set<string>();
    binding.activities.forEach((activity, index) => {
      const at = ['workflows', name, 'activities', index];
      if (seen.has(activity.id))
        context.addIssue({ code: 'custom', path: [...at, 'id'], message: `activity id "${activity.id}" is used twice in binding "${name}"` });
      seen.add(activity.id);
      activity.skills.forEach((skill, skillIndex) => {
        if (!skills.has(skillWithoutVersion(skill))) {
          context.addIssue({
            code: 'custom',
            path: [...at, 'skills', skillIndex],
            message: `"${skill}" is not one of the package's skills (the top-level "skills" list${skills.size === 0 ? ' is empty' : `: ${[...skills].join(', ')}`})`,
          });
        }
      });
    });
    if (binding.trigger.type === 'event') {
      binding.trigger.sources.forEach((source, index) => {
        // A dotted name no binding here emits may be another package's (`slug.event`), checked at install.
        if (!emits.has(source) && !source.includes('.')) {
          context.addIssue({
            code: 'custom',
            path: ['workflows', name, 'trigger', 'sources', index],
            message: `no binding of this package emits "${source}"${emits.size === 0 ? '' : ` (its emits: ${[...emits].join(', ')})`}; name another package's event in full, as "<package>.<event>"`,
          });
        }
      });
    }
  }
  agent.defaults.configurable.forEach((path, index) => {
    const segments = path.split('.');
    const target = segments.some((segment) => PROTOTYPE_SEGMENTS.has(segment)) ? undefined : valueAtPath(agent, segments);
    if (typeof target !== 'string' && typeof target !== 'number' && typeof target !== 'boolean') {
      context.addIssue({
        code: 'custom',
        path: ['defaults', 'configurable', index],
        message: `"${path}" does not name a value in this agent.json (expected a dot-path to a string, number or boolean, such as "workflows.<binding>.trigger.cron")`,
      });
    }
  });
  const cycle = findEmitCycle(localEdges(agent.workflows));
  if (cycle !== undefined) context.addIssue({ code: 'custom', path: ['workflows'], message: `emit chains must be acyclic: ${cycle.join(' → ')}` });
}

/** The whole `agent.json`. */
export const AgentJsonSchema = AgentJsonObjectSchema.superRefine(checkPackage);

/** A validated `agent.json`, defaults filled in. */
export type AgentJson = z.output<typeof AgentJsonSchema>;
export type PackageBinding = AgentJson['workflows'][string];
export type PackageActivity = PackageBinding['activities'][number];
export type PackageTrigger = PackageBinding['trigger'];

/** An edge of the emit graph: the binding that emits `event`, and one that it fires. */
export interface EmitEdge {
  /** `package.binding` of the emitter, or the binding name inside one package. */
  from: string;
  /** The event, as named in the message (namespaced across packages). */
  event: string;
  to: string;
}

function localEdges(workflows: AgentJson['workflows']): EmitEdge[] {
  const entries = Object.entries(workflows);
  return entries.flatMap(([from, binding]) =>
    binding.emit === undefined
      ? []
      : entries.flatMap(([to, other]) =>
          other.trigger.type === 'event' && other.trigger.sources.includes(binding.emit ?? '') ? [{ from, event: binding.emit ?? '', to }] : [],
        ),
  );
}

/**
 * A cycle of the emit graph as the events along it (`a.x → b.y → a.x`), or undefined when
 * it is acyclic. Depth-first from each emitter, in a stable order.
 */
export function findEmitCycle(edges: readonly EmitEdge[]): string[] | undefined {
  const out = new Map<string, EmitEdge[]>();
  for (const edge of edges) out.set(edge.from, [...(out.get(edge.from) ?? []), edge]);
  const done = new Set<string>();
  const walk = (node: string, path: EmitEdge[]): EmitEdge[] | undefined => {
    const start = path.findIndex((edge) => edge.from === node);
    if (start !== -1) return path.slice(start);
    if (done.has(node)) return undefined;
    for (const edge of out.get(node) ?? []) {
      const cycle = walk(edge.to, [...path, edge]);
      if (cycle !== undefined) return cycle;
    }
    done.add(node);
    return undefined;
  };
  for (const node of [...out.keys()].sort()) {
    const cycle = walk(node, []);
    if (cycle !== undefined) return [...cycle.map((edge) => edge.event), cycle[0]?.event ?? ''];
  }
  return undefined;
}
