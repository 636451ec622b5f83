import { describeCapability } from '../capabilities/index.ts';
import type { AgentDetailView, AgentView } from '../kernel/index.ts';

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

/** `loom agent list` as a table. */
export function formatAgentList(agents: readonly AgentView[]): string {
  if (agents.length === 0) return 'No agents. Spawn one with: loom agent spawn <manifest.toml>\n';
  const names = new Map(agents.map((agent) => [agent.id, agent.name]));
  return formatTable(
    ['NAME', 'STATE', 'ID', 'PARENT', 'MODEL'],
    agents.map((agent) => [
      agent.name,
      agent.state,
      agent.id,
      agent.parent === null ? '-' : (names.get(agent.parent) ?? agent.parent),
      agent.model ?? '(default)',
    ]),
  );
}

/** `loom agent show` as labelled lines. */
export function formatAgentDetail(agent: AgentDetailView, nameOf: (id: string) => string): string {
  const lines = [
    `name:         ${agent.name}`,
    `id:           ${agent.id}`,
    `state:        ${agent.state}`,
    `version:      ${agent.version}`,
    `description:  ${agent.description === '' ? '-' : agent.description}`,
    `module:       ${agent.module}`,
    `schedule:     ${agent.schedule}`,
    `model:        ${agent.model ?? '(daemon default)'}`,
    `parent:       ${agent.parent === null ? '-' : `${nameOf(agent.parent)} (${agent.parent})`}`,
    `children:     ${agent.children.length === 0 ? '-' : agent.children.map(nameOf).join(', ')}`,
    `session:      ${agent.session_id}`,
    `tags:         ${agent.tags.length === 0 ? '-' : agent.tags.join(', ')}`,
    `created:      ${agent.created_at}`,
    `capabilities:${agent.capabilities.length === 0 ? ' none (deny by default)' : ''}`,
    ...agent.capabilities.map((capability) => `  ${describeCapability(capability)}`),
  ];
  return lines.join('\n') + '\n';
}
