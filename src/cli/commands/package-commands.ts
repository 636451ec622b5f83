import { createInterface } from 'node:readline/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { describeCapability } from '../../capabilities/index.ts';
import { capabilitiesFromManifest } from '../../manifest/index.ts';
import { PackageError, UsageError } from '../../errors/index.ts';
import { packageEnvironment } from '../../host/index.ts';
import {
  applySettings,
  checkPackageSkills,
  describeSkillOrigin,
  emitGraphProblems,
  installPlan,
  isInstallCode,
  loadPackage,
  parseInstallCode,
  preparePackage,
  publishToRegistry,
} from '../../packages/index.ts';
import { loadSkillFolder, parseSkillReference } from '../../packages/index.ts';
import { openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { parseLimit } from '../parse-limit.ts';
import { parseKeyValues } from '../parse-key-values.ts';
import { formatInstallPlan, formatPackage, formatPackageList, formatRun, formatRuns } from '../package-format.ts';
import { withBackend } from './agent-commands.ts';

interface JsonOption {
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function printJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** A folder or archive path is sent to the daemon absolute; codes and qualified names as they are. */
function sourceFor(source: string, io: CliIo): string {
  return isInstallCode(source) || source.startsWith('@') ? source : resolve(io.cwd, source);
}

/** Asks on the terminal; without one, installing needs `--yes`. */
async function confirm(io: CliIo, question: string): Promise<boolean> {
  if ((io.stdin as { isTTY?: boolean }).isTTY !== true) {
    throw new UsageError(
      'not installed: standard input is not a terminal, so nobody can agree to the capabilities above; pass --yes to install without asking',
    );
  }
  const prompt = createInterface({ input: io.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim());
  } finally {
    prompt.close();
  }
}

/** `--input key=value`: an input of a run. */
const INPUT_FLAG = { name: '--input', form: 'key=value', example: 'topic="solar storage"' };

/** `loom package …`: validate, install, list, show, run, runs, uninstall, publish. */
export function registerPackageCommands(program: Command, io: CliIo): void {
  const pkg = program
    .command('package')
    .description('agent packages: AGENT.md + agent.json workflows that run on schedules, heartbeats, events and by hand')
    .addHelpText(
      'after',
      '\nA package is a folder (or a .tgz of one) holding AGENT.md (the persona) and agent.json (its workflows),\nand optionally loom.toml (its name, version, model and the capabilities it asks for). See docs/packages.md.\n\nExample:\n  $ loom package validate examples/packages/chief-of-staff\n  $ loom package install examples/packages/chief-of-staff --yes\n  $ loom package run chief-of-staff deep-dive --input topic="heat pumps"\n  $ loom package runs chief-of-staff\n',
    );

  pkg
    .command('validate <source>')
    .description('check a package folder or .tgz statically, without a daemon: schema, triggers, models, MCP servers, skills, emit chains')
    .option('--set <path=value>', 'override a path the package lists in defaults.configurable (repeatable)', collect, [])
    .option('--json', 'print what installing it would do, as JSON')
    .addHelpText(
      'after',
      '\nEvent sources naming another package (package.event) are checked at install, against the installed packages.\n\nExample:\n  $ loom package validate examples/packages/chief-of-staff\n  $ loom package validate ./my-agent --set workflows.morning-briefing.trigger.cron="0 8 * * *"\n',
    )
    .action(async (source: string, options: JsonOption & { set: string[] }) => {
      const { home, config } = await openHome(io);
      const { loaded: raw, dispose } = await loadPackage(resolve(io.cwd, source));
      try {
        const loaded = applySettings(raw, options.set);
        await checkPackageSkills(
          loaded,
          { registries: config.registries.map((registry) => registry.location), skillsDir: home.skillsDir },
          resolve(io.cwd, source),
        );
        const prepared = preparePackage(loaded, packageEnvironment(config));
        const external = new Set<string>();
        const problems = emitGraphProblems([{ slug: loaded.slug, agentJson: loaded.agentJson }]).filter((problem) => {
          const match = /emits "([^"]+)"/.exec(problem);
          if (match?.[1]?.includes('.') === true && !problem.includes('acyclic')) {
            external.add(match[1]);
            return false;
          }
          return true;
        });
        if (problems.length > 0) throw new PackageError(`package "${loaded.slug}" is not valid:\n${problems.map((line) => `  ${line}`).join('\n')}`);
        const plan = installPlan({ loaded, prepared, skills: loaded.agentJson.skills, source: resolve(io.cwd, source) });
        if (options.json === true) printJson(io, { valid: true, plan, external_sources: [...external] });
        else {
          io.stdout(`${loaded.slug} is valid.\n${formatInstallPlan(plan)}`);
          if (external.size > 0) io.stdout(`Event sources of other packages, checked at install: ${[...external].join(', ')}\n`);
        }
      } finally {
        await dispose();
      }
    });

  pkg
    .command('install <source>')
    .description(
      'install a package from a folder, a .tgz, an install code (AGNT-XXXX-XXXX) or @org/agents/name[@version]; or a skill by its install code (SKIL-XXXX-XXXX)',
    )
    .option('--set <path=value>', 'override a path the package lists in defaults.configurable (repeatable)', collect, [])
    .option('-y, --yes', 'install without asking (for scripts): the package gets the capabilities shown')
    .option('--json', 'print the installed package as JSON')
    .addHelpText(
      'after',
      '\nShows the capabilities the package asks for and installs only when you agree. Its agent is named\nafter the package and holds exactly those; each activity runs with only what it names.\n\nExample:\n  $ loom package install examples/packages/chief-of-staff\n  $ loom package install AGNT-7QK2-M4XD --yes\n  $ loom package install SKIL-3M9Q-ZX7A\n  $ loom package install ./briefing --set workflows.morning-briefing.trigger.cron="0 8 * * *" --yes\n',
    )
    .action(async (source: string, options: JsonOption & { set: string[]; yes?: boolean }) => {
      if (isInstallCode(source) && parseInstallCode(source).kind === 'SKIL') {
        // A skill carries no capabilities: there is nothing to agree to.
        const skills = await withBackend(io, (backend) => backend.packages.installSkill(source));
        if (options.json === true) printJson(io, skills);
        else
          io.stdout(
            skills
              .map((skill) => `${skill.created ? 'Installed' : 'Already installed'} skill ${skill.skill} (${describeSkillOrigin(skill.origin)}).\n`)
              .join(''),
          );
        return;
      }
      const from = sourceFor(source, io);
      const view = await withBackend(io, async (backend) => {
        const plan = await backend.packages.check(from, options.set);
        if (options.json !== true || options.yes !== true) io.stderr(formatInstallPlan(plan));
        if (options.yes !== true && !(await confirm(io, `Install ${plan.slug} with these capabilities? [y/N] `))) return undefined;
        // What is installed must be what was shown: the plan's digest is checked again.
        return backend.packages.install(from, options.set, plan.digest);
      });
      if (view === undefined) {
        io.stdout('Not installed.\n');
        return;
      }
      if (options.json === true) printJson(io, view);
      else io.stdout(`Installed ${view.slug} ${view.version}: agent "${view.agent}" (${view.agent_id}).\n`);
    });

  pkg
    .command('list')
    .description('list installed packages with their next fire time')
    .option('--json', 'print a JSON array of packages (as `show --json` prints each)')
    .addHelpText('after', '\nExample:\n  $ loom package list\n  $ loom package list --json\n')
    .action(async (options: JsonOption) => {
      const list = await withBackend(io, (backend) => backend.packages.list());
      io.stdout(options.json === true ? `${JSON.stringify(list, null, 2)}\n` : formatPackageList(list));
    });

  pkg
    .command('show <package>')
    .description("a package's bindings with their triggers and next fire times, and its agent's capabilities")
    .option('--json', 'print the package as JSON')
    .addHelpText('after', '\nExample:\n  $ loom package show chief-of-staff\n  $ loom package show data-pipeline --json\n')
    .action(async (slug: string, options: JsonOption) => {
      const { view, agent } = await withBackend(io, async (backend) => ({
        view: await backend.packages.show(slug),
        agent: await backend.get(slug).catch(() => undefined),
      }));
      if (options.json === true) printJson(io, view);
      else
        io.stdout(
          formatPackage(
            view,
            agent === undefined ? undefined : capabilitiesFromManifest(agent.manifest.capabilities, agent.manifest.profile).map(describeCapability),
          ),
        );
    });

  pkg
    .command('run <package> <binding>')
    .description('run a binding now (manual triggers, or any binding) and print its run')
    .option('--input <key=value>', "an input for the run, added to the binding's inputs (repeatable; JSON values are parsed)", collect, [])
    .option('--json', 'print the run as JSON')
    .addHelpText(
      'after',
      '\nA binding still running is not started twice: the command fails and the fire is recorded as skipped.\n\nExample:\n  $ loom package run chief-of-staff deep-dive --input topic="heat pumps"\n',
    )
    .action(async (slug: string, binding: string, options: JsonOption & { input: string[] }) => {
      const run = await withBackend(io, (backend) => backend.packages.run(slug, binding, parseKeyValues(INPUT_FLAG, options.input)));
      if (options.json === true) printJson(io, run);
      else io.stdout(formatRun(run));
    });

  pkg
    .command('runs [package]')
    .description('recent runs, newest first: trigger, status, tokens, cost and each activity (skipped and missed fires too)')
    .option('--limit <n>', 'at most this many runs', parseLimit)
    .option('--json', 'print the runs as JSON')
    .addHelpText('after', '\nWithout a package, the runs of every package.\n\nExample:\n  $ loom package runs\n  $ loom package runs data-pipeline --limit 5\n')
    .action(async (slug: string | undefined, options: JsonOption & { limit?: number }) => {
      const runs = await withBackend(io, (backend) =>
        backend.packages.runs({ ...(slug === undefined ? {} : { package: slug }), ...(options.limit === undefined ? {} : { limit: options.limit }) }),
      );
      io.stdout(options.json === true ? `${JSON.stringify(runs, null, 2)}\n` : formatRuns(runs));
    });

  pkg
    .command('uninstall <package>')
    .description(
      "stop its triggers, remove its agent and the package's files (its runs stay in the history, and what its agent wrote in its workspace stays there)",
    )
    .option('--json', 'print what was removed as JSON')
    .addHelpText('after', '\nExample:\n  $ loom package uninstall data-pipeline\n')
    .action(async (slug: string, options: JsonOption) => {
      const removed = await withBackend(io, (backend) => backend.packages.uninstall(slug));
      if (options.json === true) printJson(io, removed);
      else
        io.stdout(
          `Uninstalled ${removed.slug} (agent ${removed.agent_id} removed). What it wrote in its workspace is kept (workspaces/${removed.slug} in the Loom home): remove it by hand when you no longer need it.\n`,
        );
    });

  pkg
    .command('publish <folder>')
    .description('publish a package (or, with --skill, a skill) to a registry folder and print its install code')
    .requiredOption('--registry <folder>', 'the registry folder (created when missing); serve it over HTTP as it is to share it')
    .option('--skill', 'the folder is a skill (SKILL.md), published as @org/skills/<name>')
    .option('--name <qualified>', 'the qualified name: @org/agents/<name> (default: loom.toml [package].name), or @org/skills/<name> for a skill')
    .option('--version <version>', "the version (default: loom.toml [package].version, or the skill's metadata.version)")
    .option('--json', 'print { code, archive, sha256 } as JSON')
    .addHelpText(
      'after',
      '\nExample:\n  $ loom package publish examples/packages/chief-of-staff --registry ./registry\n  $ loom package publish ./skills/note-taker --skill --name @acme/skills/note-taker --registry ./registry\n',
    )
    .action(async (folder: string, options: JsonOption & { registry: string; skill?: boolean; name?: string; version?: string }) => {
      const source = resolve(io.cwd, folder);
      let name: string;
      let version: string;
      if (options.skill === true) {
        if (options.name === undefined) throw new UsageError('publishing a skill needs --name @org/skills/<name>');
        const reference = parseSkillReference(options.name, '--name');
        const skill = await loadSkillFolder(source, reference.org);
        name = reference.qualified;
        version = options.version ?? skill.version;
      } else {
        const { loaded, dispose } = await loadPackage(source);
        await dispose();
        const qualified = options.name ?? loaded.qualifiedName;
        if (qualified === undefined)
          throw new UsageError('publishing a package needs a qualified name: set [package].name in its loom.toml, or pass --name @org/agents/<name>');
        name = qualified;
        version = options.version ?? loaded.version;
      }
      const published = await publishToRegistry({
        registry: resolve(io.cwd, options.registry),
        source,
        kind: options.skill === true ? 'skill' : 'agent',
        name,
        version,
      });
      if (options.json === true) printJson(io, published);
      else
        io.stdout(`Published ${name}@${version} as ${published.code} (sha256 ${published.sha256}).\nInstall it with: loom package install ${published.code}\n`);
    });
}
