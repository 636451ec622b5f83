import { describeCapability } from '../capabilities/index.ts';
import type { AgentDetailView, AgentView, ScheduleRunView, TurnView, UsageRow } from '../kernel/index.ts';
import type { AgentEvent } from '../runtime/index.ts';

/** Pads columns so they line up; the last column is not padded. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** The model an agent runs on, saying when it is the daemon's default, or that it has none. */
function modelOf(agent: AgentView): string {
  if (agent.model !== null) return agent.model;
  // A daemon older than `runs_on` sends none: nothing to name then.
  const runsOn = agent.runs_on ?? null;
  if (runsOn === null) return 'runs_on' in agent ? '(none: no [model], no [default_model])' : '(default)';
  return `${runsOn} (default)`;
}

/** Why a running agent cannot run (a daemon older than `cannot_run` sends none). */
function cannotRunOf(agent: AgentView): AgentView['cannot_run'] {
  return agent.state === 'running' ? (agent.cannot_run ?? null) : null;
}

/** An agent's state as lists show it: "cannot run" for a running agent with no model or no key. */
export function stateOf(agent: AgentView): string {
  const problem = cannotRunOf(agent);
  if (problem === null) return agent.state;
  return problem.kind === 'no-model' ? 'cannot run: no model' : 'cannot run: no key';
}

/** `loom agent list` as a table, then a line for each agent that cannot run: why, and the fix. */
export function formatAgentList(agents: readonly AgentView[]): string {
  if (agents.length === 0) return 'No agents. Spawn one with: loom agent spawn <manifest.toml>\n';
  const names = new Map(agents.map((agent) => [agent.id, agent.name]));
  const table = formatTable(
    ['NAME', 'STATE', 'ID', 'PARENT', 'MODEL'],
    agents.map((agent) => [agent.name, stateOf(agent), agent.id, agent.parent === null ? '-' : (names.get(agent.parent) ?? agent.parent), modelOf(agent)]),
  );
  const notes = agents.flatMap((agent) => {
    const problem = cannotRunOf(agent);
    return problem === null ? [] : [`${agent.name} cannot run: ${problem.reason}; ${problem.fix}\n`];
  });
  return notes.length === 0 ? table : `${table}\n${notes.join('')}`;
}

/** A schedule with when it runs: its cron, its interval, or what wakes it. */
function scheduleOf(schedule: AgentDetailView['manifest']['schedule']): string {
  if (schedule.mode === 'periodic' && schedule.cron !== undefined) return `periodic, cron "${schedule.cron}"`;
  if (schedule.mode === 'continuous' && schedule.interval_seconds !== undefined) return `continuous, every ${schedule.interval_seconds} s`;
  if (schedule.mode === 'proactive') {
    const events = schedule.triggers.map((trigger) => (trigger.pattern === undefined ? trigger.event : `${trigger.event} ${trigger.pattern}`));
    return `proactive, woken by ${events.length === 0 ? 'nothing (it has no [[schedule.triggers]])' : events.join('; ')}`;
  }
  return schedule.mode;
}

/** The skills part of `loom agent show`: what the allowlist asks for, each skill offered, and why any named is not. */
function skillLines(agent: AgentDetailView): string[] {
  const { skills } = agent;
  if (skills === undefined) return [];
  const asked = agent.manifest.skills.length === 0 ? 'all installed (skills = [])' : agent.manifest.skills.join(', ');
  return [
    `skills:       ${asked}${skills.skills.length === 0 ? '; none offered' : ''}`,
    ...skills.skills.map(
      (skill) => `  ${skill.skill}${skill.in_prompt ? '' : ` (listed by name only: past the ${skills.budget_bytes}-byte budget for skills)`}`,
    ),
    ...skills.problems.map((problem) => `  warning: ${problem}`),
  ];
}

/** `loom agent show` as labelled lines. */
export function formatAgentDetail(agent: AgentDetailView, nameOf: (id: string) => string): string {
  const problem = cannotRunOf(agent);
  const lines = [
    `name:         ${agent.name}`,
    `id:           ${agent.id}`,
    `state:        ${stateOf(agent)}`,
    ...(problem === null ? [] : [`              ${problem.reason}; ${problem.fix}`]),
    `version:      ${agent.version}`,
    `description:  ${agent.description === '' ? '-' : agent.description}`,
    `module:       ${agent.module}`,
    `schedule:     ${scheduleOf(agent.manifest.schedule)}`,
    `model:        ${modelOf(agent)}`,
    `parent:       ${agent.parent === null ? '-' : `${nameOf(agent.parent)} (${agent.parent})`}`,
    `children:     ${agent.children.length === 0 ? '-' : agent.children.map(nameOf).join(', ')}`,
    `session:      ${agent.session_id}`,
    `tags:         ${agent.tags.length === 0 ? '-' : agent.tags.join(', ')}`,
    `created:      ${agent.created_at}`,
    `capabilities:${agent.capabilities.length === 0 ? ' none (deny by default)' : ''}`,
    ...agent.capabilities.map((capability) => `  ${describeCapability(capability)}`),
    ...skillLines(agent),
  ];
  return lines.join('\n') + '\n';
}

const usd = (amount: number): string => `$${amount.toFixed(amount >= 1 ? 2 : 4)}`;

/** The line after a reply: tokens, cost, iterations, model. */
export function formatTurnFooter(turn: TurnView): string {
  return `  [${turn.usage.input_tokens} in · ${turn.usage.output_tokens} out · ${usd(turn.cost_usd)} · ${turn.iterations} iteration${turn.iterations === 1 ? '' : 's'} · ${turn.model}]`;
}

/** One line for a tool call (`→`) or its result (`←`, `✗` when it failed). */
export function formatToolLine(event: Extract<AgentEvent, { type: 'tool-call' | 'tool-result' }>): string {
  const oneLine = (text: string, max: number): string => {
    const flat = text.replace(/\s+/g, ' ').trim();
    return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  };
  if (event.type === 'tool-call') return `  → ${event.toolName} ${oneLine(JSON.stringify(event.input), 120)}`;
  return `  ${event.isError ? '✗' : '←'} ${event.toolName}: ${oneLine(event.text, 120)}`;
}

/** `loom usage` as a table. */
export function formatUsage(rows: readonly UsageRow[]): string {
  if (rows.length === 0) return 'No usage recorded yet.\n';
  const total = rows.reduce((sum, row) => sum + row.cost_usd, 0);
  return (
    formatTable(
      ['AGENT', 'MODEL', 'CALLS', 'INPUT', 'OUTPUT', 'COST'],
      rows.map((row) => [
        row.agent ?? `${row.agent_id} (killed)`,
        row.model,
        String(row.calls),
        String(row.input_tokens),
        String(row.output_tokens),
        usd(row.cost_usd),
      ]),
    ) + `total ${usd(total)}\n`
  );
}

/** An outcome as `loom agent runs` shows it: caught-up runs and skipped groups say so. */
function outcomeOf(run: ScheduleRunView): string {
  const caughtUp = run.caught_up ? ' (caught up)' : '';
  const count = run.count > 1 ? ` ×${run.count}` : '';
  return `${run.outcome}${count}${caughtUp}`;
}

/** `loom agent runs` as a table, newest due first, with why a run was skipped, interrupted or failed. */
export function formatScheduleRuns(agent: string, runs: readonly ScheduleRunView[]): string {
  if (runs.length === 0) return `No scheduled wake-ups of ${agent} yet.\n`;
  return formatTable(
    ['DUE', 'TRIGGER', 'OUTCOME', 'STARTED', 'FINISHED', 'REASON'],
    runs.map((run) => [run.due_at, run.trigger, outcomeOf(run), run.started_at ?? '-', run.finished_at ?? '-', run.reason ?? '-']),
  );
}

/** One wake-up forced with `loom agent run`: how it ended. */
export function formatScheduleRun(agent: string, run: ScheduleRunView): string {
  return `woke ${agent}: ${run.outcome}${run.reason === null ? '' : ` (${run.reason})`}\n`;
}
