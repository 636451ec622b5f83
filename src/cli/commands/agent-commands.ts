import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { isLoomError, LoomError, UsageError } from '../../errors/index.ts';
import { loadManifestFile, type LoadedManifest, parseManifest } from '../../manifest/index.ts';
import type { AgentView } from '../../kernel/index.ts';
import { type CliBackend, openBackend, staleDaemonNote } from '../backend.ts';
import { type CliIo, readAll } from '../cli-io.ts';
import { parseLimit } from '../parse-limit.ts';
import { formatAgentDetail, formatAgentList, formatScheduleRun, formatScheduleRuns } from '../format.ts';

interface JsonOption {
  json?: boolean;
}

/** Reads a manifest from a file, or from standard input when the path is `-`. */
export async function readManifest(path: string, io: CliIo): Promise<LoadedManifest> {
  if (path === '-') return parseManifest(await readAll(io.stdin), { source: '<stdin>' });
  return loadManifestFile(path, { cwd: io.cwd });
}

/** Runs `action` against the daemon (or an in-process kernel) and closes it after, whatever happens. */
export async function withBackend<T>(io: CliIo, action: (backend: CliBackend) => Promise<T>): Promise<T> {
  const backend = await openBackend(io);
  try {
    return await action(backend);
  } catch (error) {
    // Only for a refusal or failure the daemon answered: not an exit of the command's own (Ctrl-C,
    // a refused forge), a usage error, or a daemon that does not answer.
    const answered = isLoomError(error) && !(error instanceof UsageError) && error.code !== 'DAEMON_UNREACHABLE';
    const note = backend.kind === 'daemon' && answered ? await staleDaemonNote(io).catch(() => undefined) : undefined;
    if (note === undefined || !isLoomError(error)) throw error;
    // On the line after the error's own, as it prints.
    throw new LoomError(error.code, error.category, `${error.message}\n${note}`, { details: error.details, cause: error });
  } finally {
    await backend.close();
  }
}

/** Prints the warnings the daemon (or kernel) gave that the manifest's own did not say already. */
function warnAgain(io: CliIo, given: readonly string[], printed: readonly string[]): void {
  for (const warning of given) if (!printed.includes(warning)) io.stderr(`warning: ${warning}\n`);
}

function printJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

function registerStateCommand(agent: Command, io: CliIo, verb: 'suspend' | 'resume', summary: string, detail: string): void {
  agent
    .command(`${verb} <agent>`)
    .description(summary)
    .option('--json', 'print the agent as JSON')
    .addHelpText('after', `\n${detail}\n\nExample:\n  $ loom agent ${verb} researcher\n`)
    .action(async (reference: string, options: JsonOption) => {
      const view = await withBackend(io, (backend) => backend[verb](reference));
      if (options.json === true) printJson(io, view);
      else io.stdout(`${view.name} is ${view.state} (${view.id})\n`);
    });
}

/** `loom agent …`: spawn, list, show, suspend, resume, kill; runs and run (scheduled wake-ups). */
export function registerAgentCommands(program: Command, io: CliIo): void {
  const agent = program
    .command('agent')
    .description('spawn, list, inspect, suspend, resume and kill agents')
    .addHelpText(
      'after',
      '\nAgents are named by name or id everywhere.\n\nExample:\n  $ loom agent spawn examples/agents/researcher.toml\n  $ loom agent list\n',
    );

  agent
    .command('spawn <manifest>')
    .description('spawn an agent from a TOML or JSON manifest ("-" reads standard input)')
    .option('--parent <agent>', "spawn as a child of this agent; its capabilities must cover the child's")
    .option('--json', 'print the new agent as JSON')
    .addHelpText(
      'after',
      '\nExample:\n  $ loom agent spawn examples/agents/researcher.toml\n  $ loom agent spawn examples/agents/helper.toml --parent coordinator --json\n  $ cat agent.json | loom agent spawn -\n',
    )
    .action(async (path: string, options: JsonOption & { parent?: string }) => {
      const { manifest, warnings } = await readManifest(path, io);
      for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
      const view = await withBackend(io, (backend) => backend.spawn(manifest, options.parent));
      warnAgain(io, view.warnings, warnings);
      if (options.json === true) printJson(io, view);
      else io.stdout(`spawned ${view.name} (${view.id})\n`);
    });

  agent
    .command('update <agent> <manifest>')
    .description("replace a live agent's manifest, keeping its session and memory (checked like a spawn)")
    .option('--json', 'print the updated agent as JSON')
    .addHelpText(
      'after',
      "\nThe manifest must name the same agent. A child stays within its parent, and an agent's children must still\nfit within it. A running agent's schedules and triggers restart on the new manifest.\n\nExample:\n  $ loom agent update researcher examples/agents/researcher.toml\n",
    )
    .action(async (reference: string, path: string, options: JsonOption) => {
      const { manifest, warnings } = await readManifest(path, io);
      for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
      const view = await withBackend(io, (backend) => backend.update(reference, manifest));
      warnAgain(io, view.warnings, warnings);
      if (options.json === true) printJson(io, view);
      else io.stdout(`updated ${view.name} (${view.id})\n`);
    });

  agent
    .command('list')
    .description('list the agents')
    .option('--json', 'print a JSON array')
    .addHelpText('after', '\nExample:\n  $ loom agent list --json\n')
    .action(async (options: JsonOption) => {
      const agents = await withBackend(io, (backend) => backend.list());
      if (options.json === true) printJson(io, agents);
      else io.stdout(formatAgentList(agents));
    });

  agent
    .command('show <agent>')
    .description('show an agent: state, model, parent, children, capabilities (and its manifest with --json)')
    .option('--json', 'print the agent, with its normalised manifest, as JSON')
    .addHelpText('after', '\nExample:\n  $ loom agent show researcher\n')
    .action(async (reference: string, options: JsonOption) => {
      await withBackend(io, async (backend) => {
        const view = await backend.get(reference);
        if (options.json === true) printJson(io, view);
        else {
          const names = new Map((await backend.list()).map((entry) => [entry.id, entry.name]));
          io.stdout(formatAgentDetail(view, (id) => names.get(id) ?? id));
        }
      });
    });

  registerStateCommand(
    agent,
    io,
    'suspend',
    'suspend an agent: it stops running and stays suspended across restarts',
    'A suspended agent keeps its session and memory; resume it to run again.',
  );
  registerStateCommand(agent, io, 'resume', 'resume a suspended agent', 'The agent runs again with its session and memory as they were.');

  agent
    .command('runs <agent>')
    .description("list an agent's scheduled wake-ups, newest first: run, caught up after a restart, or skipped and why")
    .option('--limit <n>', 'at most this many (1–1000; 100 by default)', parseLimit)
    .option('--json', 'print a JSON array')
    .addHelpText(
      'after',
      '\nEvery wake-up a continuous or periodic agent was due is recorded, with its outcome: completed, failed,\ninterrupted, or skipped with the reason (the previous run still going, a budget spent, missed while the\ndaemon was down and not caught up). See docs/decisions/0046-schedule-runs-and-catch-up.md.\n\nExample:\n  $ loom agent runs reporter --limit 20\n',
    )
    .action(async (reference: string, options: JsonOption & { limit?: number }) => {
      const runs = await withBackend(io, (backend) => backend.runs(reference, options.limit));
      if (options.json === true) printJson(io, runs);
      else io.stdout(formatScheduleRuns(reference, runs));
    });

  agent
    .command('run <agent>')
    .description('force a wake-up of a continuous or periodic agent now, and wait for it to end')
    .option('--json', 'print the run as JSON')
    .addHelpText(
      'after',
      '\nThe agent is woken with the message its schedule sends, and the run is recorded as "manual" (loom agent runs).\nA wake-up of its own still running makes this one skipped.\n\nExample:\n  $ loom agent run reporter\n',
    )
    .action(async (reference: string, options: JsonOption) => {
      const run = await withBackend(io, (backend) => backend.wake(reference));
      if (options.json === true) printJson(io, run);
      else io.stdout(formatScheduleRun(reference, run));
    });

  agent
    .command('reset <agent>')
    .description("empty an agent's session history (its memory, capabilities and id stay)")
    .addHelpText('after', '\nExample:\n  $ loom agent reset researcher\n')
    .action(async (reference: string) => {
      await withBackend(io, (backend) => backend.resetSession(reference));
      io.stdout(`Reset the session of ${reference}.\n`);
    });

  agent
    .command('kill <agent>')
    .description('kill an agent and its descendants: removed with their sessions and memory (irreversible)')
    .option('--json', 'print the killed agents as a JSON array')
    .option('-y, --yes', 'kill an agent with children without asking')
    .addHelpText(
      'after',
      '\nChildren are killed with their parent (see docs/decisions/0004-kill-cascades-to-children.md): for an agent\nwith children, kill asks first (--yes for scripts).\n\nExample:\n  $ loom agent kill researcher\n  $ loom agent kill coordinator --yes\n',
    )
    .action(async (reference: string, options: JsonOption & { yes?: boolean }) => {
      const killed: AgentView[] = await withBackend(io, async (backend) => {
        const agent = await backend.get(reference);
        if (agent.children.length > 0 && options.yes !== true) {
          const question = `${agent.name} has ${agent.children.length} child${agent.children.length === 1 ? '' : 'ren'}, killed with it (their sessions and memory too). Kill them all? [y/N] `;
          if (io.interactive !== true)
            throw new UsageError(
              `not killed: ${agent.name} has ${agent.children.length} child${agent.children.length === 1 ? '' : 'ren'}, which would be killed with it; pass --yes to kill them all`,
            );
          const prompt = createInterface({ input: io.stdin, output: process.stderr });
          const answer = await prompt.question(question).finally(() => prompt.close());
          if (!/^y(es)?$/i.test(answer.trim())) return [];
        }
        return backend.kill(reference);
      });
      if (killed.length === 0 && options.json !== true) io.stdout('Not killed.\n');
      if (options.json === true) printJson(io, killed);
      else for (const view of killed) io.stdout(`killed ${view.name} (${view.id})\n`);
    });
}
