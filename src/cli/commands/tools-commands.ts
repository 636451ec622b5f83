import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { ForgedToolView } from '../../forged-tools/index.ts';
import { isLoomError, UsageError } from '../../errors/index.ts';
import { safeParseJson } from '../../validation/index.ts';
import type { CliBackend } from '../backend.ts';
import { EXIT, ExitStatus, type CliIo } from '../cli-io.ts';
import { formatTable } from '../format.ts';
import { withBackend } from './agent-commands.ts';

interface JsonOption {
  json?: boolean;
}

function printJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

const percent = (value: number | null): string => (value === null ? '-' : `${Math.round(value * 100)}%`);
const millis = (value: number | null): string => (value === null ? '-' : value < 10 ? value.toFixed(2) : value.toFixed(0));

/** `loom tools list` as a table. */
export function formatForgedToolList(tools: readonly ForgedToolView[]): string {
  if (tools.length === 0) return 'No forged tools. An agent with [emergent] and the forge_tool grant makes them; see docs/forged-tools.md\n';
  return formatTable(
    ['ID', 'NAME', 'AGENT', 'TIER', 'STATUS', 'MODE', 'CALLS', 'SUCCESS', 'MEAN MS'],
    tools.map((tool) => [
      tool.id.slice(0, 8),
      tool.name,
      tool.agent,
      tool.tier,
      tool.status,
      tool.mode,
      String(tool.calls),
      percent(tool.successRate),
      millis(tool.meanLatencyMs),
    ]),
  );
}

/** `loom tools show` in words: what it is, how it has done, what the judges said, its implementation. */
export function formatForgedTool(tool: ForgedToolView): string {
  const lines = [
    `${tool.name} (${tool.id})`,
    `  ${tool.description}`,
    `  agent ${tool.agent}, ${tool.tier} tier, ${tool.status}${tool.statusReason === null ? '' : ` (${tool.statusReason})`}, ${tool.mode}, ${tool.origin}`,
    `  calls ${tool.calls}, success ${percent(tool.successRate)}, mean ${millis(tool.meanLatencyMs)} ms`,
    '  verdicts:',
    ...tool.verdicts.map((verdict) => {
      const issues = Array.isArray(verdict['issues']) ? (verdict['issues'] as unknown[]).map(String) : [];
      const role = typeof verdict['role'] === 'string' ? verdict['role'] : 'review';
      const confidence = typeof verdict['confidence'] === 'number' ? verdict['confidence'] : '?';
      return `    ${role}: ${verdict['approved'] === true ? 'approved' : 'refused'}, confidence ${confidence}${issues.length === 0 ? '' : ` — ${issues.join('; ')}`}`;
    }),
  ];
  const implementation = tool.request['implementation'] as
    { mode?: string; steps?: { name: string; tool: string }[]; code?: string; allowlist?: string[] } | undefined;
  if (implementation?.mode === 'compose') {
    lines.push('  steps:', ...(implementation.steps ?? []).map((step, index) => `    ${index + 1}. ${step.name}: ${step.tool}`));
  } else if (implementation?.code !== undefined) {
    lines.push(
      `  allowlist: ${(implementation.allowlist ?? []).join(', ') || '(none)'}`,
      '  source:',
      ...implementation.code.split('\n').map((line) => `    ${line}`),
    );
  } else {
    lines.push(
      `  allowlist: ${(implementation?.allowlist ?? []).join(', ') || '(none)'}`,
      `  source: not stored ([emergent].persist_sandbox_source = false); sha256 ${tool.codeHash ?? '?'}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Reads a file for a command, naming it when it cannot. */
async function readInput(io: CliIo, path: string): Promise<string> {
  try {
    return await readFile(resolve(io.cwd, path), 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read "${path}": ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A forge or import through the backend: the tool, or the refusal on stderr and exit status 1. */
async function registered(io: CliIo, options: JsonOption, work: (backend: CliBackend) => Promise<ForgedToolView>): Promise<void> {
  let tool: ForgedToolView;
  try {
    tool = await withBackend(io, work);
  } catch (error) {
    if (isLoomError(error) && error.code === 'FORGE_REFUSED') {
      io.stderr(`refused: ${error.message}\n`);
      throw new ExitStatus(EXIT.failure);
    }
    throw error;
  }
  if (options.json === true) printJson(io, tool);
  else io.stdout(`registered ${tool.name} (${tool.id.slice(0, 8)}) for ${tool.agent}, ${tool.tier} tier\n`);
}

/** `loom tools …`: forged tools (docs/forged-tools.md). */
export function registerToolsCommands(program: Command, io: CliIo): void {
  const tools = program
    .command('tools')
    .description('forged tools: tools agents built at run time (list, show, forge, export, import, promote, demote)')
    .addHelpText(
      'after',
      '\nAn agent with [emergent] and the forge_tool grant forges them. A tool is named by its id or a unique start of it\n(at least 4 characters; `loom tools list` shows 8). See docs/forged-tools.md.\n\nExample:\n  $ loom tools list --agent toolsmith\n  $ loom tools show 3f9a2c1e\n  $ loom tools promote 3f9a2c1e\n',
    );

  tools
    .command('list')
    .description('list forged tools with their tier, status and stats')
    .option('--agent <agent>', 'only the tools of this agent')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ loom tools list\n  $ loom tools list --agent toolsmith --json\n')
    .action(async (options: JsonOption & { agent?: string }) => {
      const list = await withBackend(io, (backend) => backend.forgedTools.list(options.agent));
      if (options.json === true) printJson(io, list);
      else io.stdout(formatForgedToolList(list));
    });

  tools
    .command('show <id>')
    .description('show a forged tool: verdicts, stats, its steps or source (an id prefix will do)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ loom tools show 3f9a2c1e\n  $ loom tools show 3f9a2c1e --json\n')
    .action(async (id: string, options: JsonOption) => {
      const tool = await withBackend(io, (backend) => backend.forgedTools.get(id));
      if (options.json === true) printJson(io, tool);
      else io.stdout(formatForgedTool(tool));
    });

  tools
    .command('forge <request>')
    .description("forge a tool as an agent from a JSON file holding a forge request: built, tested and judged like the agent's own forge_tool call")
    .requiredOption('--agent <agent>', 'the agent to forge as (its [emergent] settings and grants apply)')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      '\nThe request holds name, description, inputSchema, optional outputSchema, implementation (compose or sandbox)\nand testCases; see docs/forged-tools.md. A refused forge prints the stage and the reason, and exits with status 1.\n\nExample:\n  $ loom tools forge slugify.json --agent toolsmith\n',
    )
    .action(async (path: string, options: JsonOption & { agent: string }) => {
      const parsed = safeParseJson(await readInput(io, path));
      if (!parsed.ok) throw new UsageError(`cannot read forge request "${path}": ${parsed.message}`);
      await registered(io, options, (backend) => backend.forgedTools.forge(options.agent, parsed.value));
    });

  tools
    .command('export <id>')
    .description('export a forged tool as agentos.emergent-tool.v1 YAML (a sandbox tool whose source is not persisted is redacted)')
    .option('-o, --output <file>', 'write to this file instead of standard output')
    .addHelpText('after', '\nExample:\n  $ loom tools export 3f9a2c1e -o slugify.yaml\n  $ loom tools import slugify.yaml --agent researcher\n')
    .action(async (id: string, options: { output?: string }) => {
      const text = await withBackend(io, (backend) => backend.forgedTools.export(id));
      if (options.output === undefined) io.stdout(text);
      else {
        await writeFile(resolve(io.cwd, options.output), text, 'utf8');
        io.stdout(`wrote ${options.output}\n`);
      }
    });

  tools
    .command('import <file>')
    .description('import an exported tool into an agent: tested and judged again before it is offered')
    .requiredOption('--agent <agent>', 'the agent to import into')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ loom tools import slugify.yaml --agent researcher\n')
    .action(async (path: string, options: JsonOption & { agent: string }) => {
      const text = await readInput(io, path);
      await registered(io, options, (backend) => backend.forgedTools.import(options.agent, text));
    });

  tools
    .command('promote <id>')
    .description("promote a tool one tier: session → agent by the two-judge panel; agent → shared by a person's approval")
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      '\nPromoting to the shared tier opens an approval, which only a running daemon can wait for (loom start).\n\nExample:\n  $ loom tools promote 3f9a2c1e\n  $ loom approvals approve 5f2a   # the approval it printed, for the shared tier\n',
    )
    .action(async (id: string, options: JsonOption) => {
      const result = await withBackend(io, async (backend) => {
        // The shared tier waits for a person's decision, which only a running daemon can wait for.
        if (backend.kind === 'in-process' && (await backend.forgedTools.get(id)).tier === 'agent') {
          throw new UsageError(
            "promoting to the shared tier waits for a person's approval, and only a running daemon can wait for it: start one with `loom start`, then run this again",
          );
        }
        return backend.forgedTools.promote(id);
      });
      if (options.json === true) return printJson(io, result);
      const { tool } = result;
      if (result.outcome === 'promoted') io.stdout(`promoted ${tool.name} to the ${tool.tier} tier\n`);
      else if (result.outcome === 'pending-approval')
        io.stdout(`waiting for approval ${result.approvalId ?? ''}: approve with \`loom approvals approve ${result.approvalId ?? '<id>'}\`\n`);
      else {
        io.stderr(`refused: ${result.reason ?? 'no reason given'}\n`);
        throw new ExitStatus(EXIT.failure);
      }
    });

  tools
    .command('demote <id>')
    .description('demote a tool one tier (a session tool stops being offered)')
    .option('--reason <text>', 'why, for the audit log')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ loom tools demote 3f9a2c1e --reason "mangles accented letters"\n')
    .action(async (id: string, options: JsonOption & { reason?: string }) => {
      const tool = await withBackend(io, (backend) => backend.forgedTools.demote(id, options.reason));
      if (options.json === true) printJson(io, tool);
      else io.stdout(`${tool.name} is now ${tool.status === 'active' ? `in the ${tool.tier} tier` : tool.status}\n`);
    });
}
