/**
 * Every type of event the audit log stores (the `type` of a row of `/api/audit` and of an event of
 * `/api/events`), each with what it records. A name is `<noun>-<verb>` with the verb bare, in one
 * tense (decision 0072): what happened to what, never a past participle (`-ed`) or a bare noun
 * (`-error`, `-fault`). The kernel's `KernelEvent` union carries exactly these types but the A2A
 * push records; test/wire/event-types.test.ts holds both, and each name to the rule.
 */
export const EVENT_TYPES = {
  'agent-spawn': 'an agent was spawned',
  'agent-suspend': 'an agent was suspended',
  'agent-resume': 'an agent was resumed',
  'agent-update': "an agent's manifest was updated",
  'agent-kill': 'an agent was killed',
  'approval-request': 'a tool call waits for a person',
  'approval-decide': 'a person approved or denied a waiting tool call (or answered a question)',
  'turn-finish': 'a turn ended with an answer',
  'turn-refuse': 'a turn was refused before it ran (access, quota, state)',
  'turn-cancel': 'a turn was cancelled by its caller',
  'turn-fail': 'a turn failed for another reason than its models',
  'model-fail': 'a turn failed because every model of it failed',
  'tool-finish': 'a tool call ran',
  'tool-fail': 'a tool call ran and the tool answered with an error',
  'tool-deny': 'a tool call was refused: no capability, or an approval denied',
  'tool-reject': "a tool call was refused: its input does not match the tool's schema",
  'tool-block': 'a tool call was refused by the loop guard',
  'tool-time-out': 'a tool call ran out of time',
  'tool-taint': 'a tool call carried untrusted text into a sink',
  'tool-forge': 'an agent forged a tool (or the forge was refused)',
  'tool-promote': 'a forged tool was promoted a tier',
  'tool-demote': 'a forged tool was demoted a tier',
  'tool-retire': 'a forged tool was retired with its session',
  'tool-sandbox-fail': 'a forged tool failed in its sandbox (a limit, an oversized output, a refused bridge call)',
  'package-fire': "a package's trigger fired and a run's activities started or resumed (a heartbeat's run checking whether its state changed has none yet)",
  'package-activity-start': "a run's activity started",
  'package-activity-finish': "a run's activity ended",
  'package-notify': 'an activity failed and its owner is notified',
  'package-emit': 'a run emitted an event',
  'package-run-finish': 'a package run ended',
  'package-skip': 'a fire was skipped: the previous run still going',
  'package-miss': 'fires were missed while the daemon was down',
  'package-install': 'a package was installed',
  'schedule-run-finish': 'a scheduled wake-up ended (run or skipped)',
  'channel-refuse': "a channel's policy turned a person away",
  'channel-pair': 'the owner paired a person with a channel',
  'channel-reply-fail': 'the platform did not take a message, retries spent',
  'chain-of-thought-finish': "a chain-of-thought agent's turn ended, with its trace",
  'workflow-state-change': "a workflow's state changed",
  'workflow-task-finish': "a workflow's task was completed or rejected",
  'code-module-fail': "a code agent's module failed a message",
  'a2a-push-deliver': 'an A2A push notification was delivered',
  'a2a-push-fail': 'an A2A push notification could not be delivered',
} as const;

/** A type of event the audit log stores. */
export type EventType = keyof typeof EVENT_TYPES;

/**
 * The types the audit log stored before decision 0072, by their names now: the store's migration
 * rewrites its rows, and `/api/audit?type=` answers an old name with the new one.
 */
export const RENAMED_EVENT_TYPES = {
  'turn-error': 'turn-fail',
  'model-error': 'model-fail',
  'tool-failed': 'tool-fail',
  'tool-denied': 'tool-deny',
  'tool-invalid': 'tool-reject',
  'tool-blocked': 'tool-block',
  'tool-timeout': 'tool-time-out',
  'tool-tainted': 'tool-taint',
  'tool-sandbox-fault': 'tool-sandbox-fail',
  'channel-refused': 'channel-refuse',
  'channel-paired': 'channel-pair',
  'channel-reply-failed': 'channel-reply-fail',
  'cot-trace': 'chain-of-thought-finish',
  'workflow-state': 'workflow-state-change',
  'workflow-task': 'workflow-task-finish',
  'code-module-fault': 'code-module-fail',
  'a2a-push-delivered': 'a2a-push-deliver',
  'a2a-push-failed': 'a2a-push-fail',
} as const satisfies Record<string, EventType>;

/** Whether `type` is a type of event the audit log stores. */
export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_TYPES, type);
}

/**
 * What is wrong with `type` as an event type to filter on: its new name when it is an old one, the
 * known types when it is none; undefined when it is a type.
 */
export function eventTypeProblem(type: string): string | undefined {
  if (isEventType(type)) return undefined;
  const renamed = (RENAMED_EVENT_TYPES as Record<string, EventType | undefined>)[type];
  if (renamed !== undefined) return `event type "${type}" is now called "${renamed}" (decision 0072); ask for "${renamed}"`;
  return `unknown event type "${type}"; the types are ${Object.keys(EVENT_TYPES).join(', ')}`;
}
