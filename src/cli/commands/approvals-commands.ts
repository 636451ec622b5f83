import type { Command } from 'commander';
import type { ApprovalView } from '../../http/index.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTable } from '../format.ts';
import { parseKeyValues } from '../parse-key-values.ts';
import { UsageError } from '../../errors/index.ts';
import type { CliBackend } from '../backend.ts';
import { withBackend } from './agent-commands.ts';

interface DecideOptions {
  reason?: string;
  json?: boolean;
  answer?: string[];
}

/** `--answer field=value`: one field of a question's answer. */
const ANSWER_FLAG = { name: '--answer', form: 'field=value', example: 'name=Ada' };

function oneLine(value: unknown, max: number): string {
  const flat = JSON.stringify(value).replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `loom approvals list` as a table: pending ones show when they expire, decided ones who decided. */
export function formatApprovals(approvals: readonly ApprovalView[], all: boolean): string {
  if (approvals.length === 0) {
    return all ? 'No approval requests yet.\n' : "No pending approvals. (Tool calls listed in an agent's [autonomous].approval_required_for wait here.)\n";
  }
  return formatTable(
    ['ID', 'AGENT', 'TOOL', 'STATUS', 'WHEN', 'INPUT'],
    approvals.map((approval) => [
      approval.id,
      approval.agent,
      approval.tool,
      approval.status === 'pending' ? 'pending' : `${approval.status} by ${approval.decided_by ?? '?'}`,
      approval.status === 'pending' ? `expires ${approval.expires_at}` : (approval.decided_at ?? '-'),
      oneLine(approval.input, 80),
    ]),
  );
}

/** The pending request an id or a unique prefix of one names (as `git` takes a short hash). */
async function approvalId(backend: CliBackend, given: string): Promise<string> {
  const pending = await backend.approvals('pending');
  if (pending.some((approval) => approval.id === given)) return given;
  const matches = pending.filter((approval) => approval.id.startsWith(given));
  if (matches.length > 1)
    throw new UsageError(
      `"${given}" is the start of ${matches.length} pending requests (${matches.map((approval) => approval.id).join(', ')}); give more of the id`,
    );
  return matches[0]?.id ?? given;
}

function registerDecideCommand(approvals: Command, io: CliIo, verb: 'approve' | 'deny'): void {
  const approved = verb === 'approve';
  const command = approvals.command(`${verb} <id>`);
  if (approved) {
    command.option(
      '--answer <field=value>',
      'answer a question (an MCP server asking a person; the fields of its requestedSchema): one field each, repeated; JSON values (numbers, true, lists) are taken as such',
      (value: string, previous: string[] = []) => [...previous, value],
    );
  }
  command
    .description(
      approved ? 'approve a pending tool call: the waiting agent runs it' : 'deny a pending tool call: the waiting agent gets an error instead of the result',
    )
    .option('--reason <text>', approved ? 'why (recorded with the decision)' : 'why (recorded, and told to the agent)')
    .option('--json', 'print the decided approval as JSON')
    .addHelpText(
      'after',
      `\nThe id is the one \`loom approvals list\` shows, or a unique start of it. A request that was already decided (or expired) is refused.\n\nExample:\n  $ loom approvals ${verb} 0b6e1c1e-8d7f-4d1a-9f43-2a0f3c9d5e11\n  $ loom approvals ${verb} 0b6e1c1e-8d7f-4d1a-9f43-2a0f3c9d5e11 --reason "${approved ? 'looks right' : 'not in that folder'}"\n${approved ? '  $ loom approvals approve 5f2a --answer name="Ada Lovelace" --answer check=true   # a question: deny declines it\n' : ''}`,
    )
    .action(async (id: string, options: DecideOptions) => {
      // A question's answer (`--answer field=value`, repeated); none without the flag.
      const answer = options.answer === undefined || options.answer.length === 0 ? undefined : parseKeyValues(ANSWER_FLAG, options.answer);
      const view = await withBackend(io, async (backend) => backend.decideApproval(await approvalId(backend, id), approved, options.reason, answer));
      if (options.json === true) io.stdout(`${JSON.stringify(view, null, 2)}\n`);
      else io.stdout(`${view.status} ${view.tool} for ${view.agent} (${view.id})${view.reason === null ? '' : `: ${view.reason}`}\n`);
    });
}

/** `loom approvals …`: list, approve, deny. */
export function registerApprovalsCommands(program: Command, io: CliIo): void {
  const approvals = program
    .command('approvals')
    .description('list, approve and deny tool calls waiting for a human ([autonomous].approval_required_for)')
    .addHelpText(
      'after',
      '\nA tool call of a tool listed in an agent\'s [autonomous].approval_required_for waits until someone\napproves or denies it (here, over the API, or in the dashboard); nobody deciding denies it after a timeout.\n\nExample:\n  $ loom approvals list\n  $ loom approvals approve <id>\n  $ loom approvals deny <id> --reason "not now"\n',
    );

  approvals
    .command('list')
    .description('list pending approvals (all of them, decided ones too, with --all)')
    .option('--all', 'include approved, denied and expired requests')
    .option('--json', 'print a JSON array of { id, agent_id, agent, tool, input, status, requested_at, expires_at, decided_at, decided_by, reason }')
    .addHelpText('after', '\nExample:\n  $ loom approvals list\n  $ loom approvals list --all --json\n')
    .action(async (options: { all?: boolean; json?: boolean }) => {
      const all = options.all === true;
      const list = await withBackend(io, (backend) => backend.approvals(all ? 'all' : 'pending'));
      io.stdout(options.json === true ? `${JSON.stringify(list, null, 2)}\n` : formatApprovals(list, all));
    });

  registerDecideCommand(approvals, io, 'approve');
  registerDecideCommand(approvals, io, 'deny');
}
