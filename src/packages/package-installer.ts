import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, rmdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Clock, InstalledPackageRecord, InstalledSkillText, JsonObject, Store } from '../contracts/index.ts';
import { LoomError, PackageError } from '../errors/index.ts';
import { createLineup, type Kernel } from '../kernel/index.ts';
import { type ManifestCapabilities, ManifestSchema, namedModel } from '../manifest/index.ts';
import { modelEndpoint } from '../models/index.ts';
import { unpackArchive } from './archive.ts';
import { emitGraphProblems, type GraphPackage, namespacedSource } from './emit-graph.ts';
import { isInstallCode, parseInstallCode } from './install-code.ts';
import { type LoadedPackage, loadPackage, loadPackageArchive } from './load-package.ts';
import { AgentJsonSchema, type PackageTrigger } from './package-schema.ts';
import type { PackageRuntime } from './package-runtime.ts';
import { copyPackageFolder } from './package-folder.ts';
import { applySettings } from './package-settings.ts';
import { type PackageEnvironment, type PreparedPackage, preparePackage } from './prepare-package.ts';
import { resolveFromRegistries } from './registry.ts';
import { namespacedEvent } from './run-binding.ts';
import { checkSkillInstallable, findInstalledSkill, installSkill, type LoadedSkill, loadSkillFolder, parseSkillReference, resolveSkillClosure, type SkillReference, skillsPrompt } from './skills.ts';

/** What installing a package would do, shown to the owner before it happens. */
export interface InstallPlan {
  slug: string;
  qualifiedName: string | null;
  version: string;
  source: string;
  /** What its agent will hold. */
  capabilities: ManifestCapabilities;
  /**
   * Its agent's own model, key variable and URL: shown because a package's loom.toml may name
   * them (activities' models are config's aliases or `provider/model`, on config's keys).
   */
  model: { name: string; baseUrl: string | null; apiKeyEnv: string | null; fromPackage: boolean } | null;
  /** Whether they were derived from the activities (no `[capabilities]` in loom.toml). */
  derived: boolean;
  /** Every skill it brings, dependencies included: `@org/skills/name@version`. */
  skills: string[];
  bindings: { name: string; description: string; trigger: PackageTrigger; emit: string | null; costEstimate: string }[];
  pricing: { model?: string | undefined; cost?: number | undefined };
  timezone: string;
  /**
   * The agent's workspace (`workspaces/<slug>` in the Loom home) when it exists already and holds
   * files: left by an uninstalled package or a killed agent of that name (both keep it). The new
   * agent can read them, so the owner is told before agreeing. Null otherwise.
   */
  workspace: { path: string; files: number } | null;
  /**
   * sha256 over the plan and what it was made from (agent.json, AGENT.md, loom.toml): install
   * given the digest of the plan a person agreed to refuses a package that changed since.
   */
  digest: string;
}

/** A package loaded and checked, ready to install (or only reported, by `validate`). */
export interface CheckedPackage {
  plan: InstallPlan;
  loaded: LoadedPackage;
  prepared: PreparedPackage;
  skills: LoadedSkill[];
  /** Every skill's system-prompt text and what it depends on, by qualified name. */
  prompts: ReadonlyMap<string, InstalledSkillText>;
  /** Removes the scratch folders (an archive's unpacked files). */
  dispose(): Promise<void>;
}

/** What the installer needs. */
export interface PackageInstallerOptions {
  kernel: Pick<Kernel, 'spawn' | 'kill' | 'list' | 'publish'>;
  store: Pick<Store, 'packages'>;
  runtime: Pick<PackageRuntime, 'activate' | 'deactivate'>;
  clock: Clock;
  environment: PackageEnvironment;
  /** Registries (folders or URLs) that codes and qualified names resolve through, in order. */
  registries: readonly string[];
  /** Where installed packages' files are kept, a folder each. */
  packagesDir: string;
  /** Where installed skills are kept. */
  skillsDir: string;
  /**
   * Where agents' workspaces are (the Loom home's `workspaces/`). With it, the plan tells of a
   * package agent's workspace left from before, and a failed install removes the one it made;
   * without it, the installer leaves workspaces alone.
   */
  workspacesDir?: string;
  fetch?: typeof fetch;
}

/** The package installer: `loom package install|uninstall` and their API. */
export interface PackageInstaller {
  /**
   * Loads a package (a folder, a `.tgz`, an install code or `@org/agents/name[@version]`), applies
   * the owner's settings, gathers its skills and checks it against this daemon and every
   * installed package. Nothing is installed.
   * @throws {PackageError} naming every problem.
   */
  check(source: string, settings?: readonly string[]): Promise<CheckedPackage>;
  /**
   * Installs it when `confirm` agrees with the plan: its skills, its agent (name = slug; the
   * capabilities shown), its record, its triggers. All or nothing: a failure on the way removes
   * what this install added (the skill versions it installed, the agent, the package's files, the
   * record, the workspace folder it made), keeping what was there before.
   * @returns undefined when the owner declined.
   */
  install(source: string, options: { settings?: readonly string[]; confirm: (plan: InstallPlan) => boolean | Promise<boolean> }): Promise<InstalledPackageRecord | undefined>;
  /**
   * Stops its triggers, kills its agent and removes it (its runs stay in the history).
   * @throws {LoomError} `PACKAGE_NOT_FOUND`; `PACKAGE_IN_USE` when another package's event trigger listens to it.
   */
  uninstall(slug: string): Promise<InstalledPackageRecord>;
}

const QUALIFIED_AGENT = /^@[a-z0-9][a-z0-9-]*\/agents\/[a-z0-9][a-z0-9-]*(?:@[0-9A-Za-z.+-]+)?$/;

function modelOf(prepared: PreparedPackage, loaded: LoadedPackage): InstallPlan['model'] {
  const model = namedModel(prepared.manifest.model);
  if (model === undefined) return null;
  // The key it will really send: its own variable, or the provider's default one.
  const endpoint = modelEndpoint({ provider: model.provider, model: model.model, api_key_env: model.api_key_env, base_url: model.base_url });
  return { name: `${model.provider}/${model.model}`, baseUrl: model.base_url ?? null, apiKeyEnv: endpoint.keyVariable, fromPackage: loaded.loomToml.model !== undefined };
}

/**
 * The plan of a loaded, prepared package (what `validate` and `install` show); `workspace` is the
 * agent's workspace left from before, when the daemon has one (`validate` reads no daemon).
 */
export function installPlan(loaded: LoadedPackage, prepared: PreparedPackage, skills: readonly string[], source: string, workspace: InstallPlan['workspace'] = null): InstallPlan {
  const plan: Omit<InstallPlan, 'digest'> = {
    slug: loaded.slug,
    qualifiedName: loaded.qualifiedName ?? null,
    version: loaded.version,
    source,
    capabilities: prepared.capabilities,
    model: modelOf(prepared, loaded),
    derived: prepared.derived,
    skills: [...skills],
    bindings: Object.entries(loaded.agentJson.workflows).map(([name, binding]) => ({
      name,
      description: binding.description,
      trigger: binding.trigger,
      emit: binding.emit === undefined ? null : `${loaded.slug}.${binding.emit}`,
      costEstimate: binding.budget.cost_estimate,
    })),
    pricing: loaded.agentJson.pricing,
    timezone: prepared.timezone,
    workspace,
  };
  const digest = createHash('sha256').update(JSON.stringify({ plan, agentJson: loaded.rawAgentJson, persona: loaded.persona, loomToml: loaded.loomToml })).digest('hex');
  return { ...plan, digest };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** How many files (not folders) are in the folder, at any depth; undefined when there is no such folder. */
async function filesIn(folder: string): Promise<number | undefined> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  });
  return entries?.filter((entry) => !entry.isDirectory()).length;
}

/** Runs each cleanup step, whatever the others do: one that fails must not keep the rest from running. */
async function undo(steps: readonly (() => Promise<unknown>)[]): Promise<void> {
  for (const step of steps) await step().catch(() => undefined);
}

/** Creates the installer. */
export function createPackageInstaller(options: PackageInstallerOptions): PackageInstaller {
  const { kernel, store, environment } = options;
  const fetchOptions = options.fetch === undefined ? {} : { fetch: options.fetch };

  /** A skill from the package's own `skills/<name>/`, the installed ones, or a registry. */
  async function findSkill(reference: SkillReference, packageDir: string, scratch: string[]): Promise<LoadedSkill> {
    const bundled = join(packageDir, 'skills', reference.name);
    if (await exists(join(bundled, 'SKILL.md'))) {
      const skill = await loadSkillFolder(bundled, reference.org);
      if (reference.version === undefined || reference.version === skill.version) return skill;
    }
    const installed = await findInstalledSkill(options.skillsDir, reference);
    if (installed !== undefined) return installed;
    if (options.registries.length === 0) {
      throw new PackageError(`cannot find skill "${reference.qualified}${reference.version === undefined ? '' : `@${reference.version}`}": it is not in the package's skills/ folder, not installed, and config.toml lists no [[registries]]`);
    }
    const found = await resolveFromRegistries(options.registries, `${reference.qualified}${reference.version === undefined ? '' : `@${reference.version}`}`, fetchOptions);
    const folder = await mkdtemp(join(tmpdir(), 'loom-skill-'));
    scratch.push(folder);
    return loadSkillFolder(await unpackArchive(found.bytes, folder), reference.org);
  }

  async function fetchPackage(source: string): Promise<{ loaded: LoadedPackage; dispose: () => Promise<void>; source: string }> {
    if (isInstallCode(source) || QUALIFIED_AGENT.test(source)) {
      if (isInstallCode(source) && parseInstallCode(source).kind === 'SKIL') {
        throw new PackageError(`cannot install "${source}" as a package: it is a skill's install code (SKIL-…); a package's starts with AGNT-. Skills come with the packages that name them in agent.json "skills"`);
      }
      if (options.registries.length === 0) throw new PackageError(`cannot install "${source}": config.toml lists no [[registries]] to look it up in`);
      const found = await resolveFromRegistries(options.registries, source, fetchOptions);
      const slug = found.name.split('/').at(-1);
      const { loaded, dispose } = await loadPackageArchive(found.bytes, `${found.name}@${found.version}`, slug === undefined ? {} : { slug });
      if (loaded.qualifiedName !== undefined && loaded.qualifiedName !== found.name) {
        await dispose();
        throw new PackageError(`cannot install "${source}": the registry lists it as ${found.name}, but its loom.toml names ${loaded.qualifiedName}; the archive is not the package it claims to be`);
      }
      return { loaded: { ...loaded, qualifiedName: loaded.qualifiedName ?? found.name, version: found.version }, dispose, source: `${found.name}@${found.version} (${found.code}, ${found.registry})` };
    }
    return { ...(await loadPackage(source)), source };
  }

  /** The workspace of the package's agent when it holds files from before (see {@link InstallPlan.workspace}). */
  async function leftWorkspace(slug: string): Promise<InstallPlan['workspace']> {
    if (options.workspacesDir === undefined) return null;
    const files = await filesIn(join(options.workspacesDir, slug));
    return files === undefined || files === 0 ? null : { path: `workspaces/${slug}`, files };
  }

  /**
   * Installs and uninstalls, one at a time: a failed install removes the skill versions it added,
   * which an install running beside it could have found installed and taken as its own.
   */
  const oneAtATime = createLineup();

  const installer: PackageInstaller = {
    async check(source, settings = []) {
      const fetched = await fetchPackage(source);
      const scratch: string[] = [];
      const dispose = async (): Promise<void> => {
        await fetched.dispose();
        await Promise.all(scratch.map((folder) => rm(folder, { recursive: true, force: true })));
      };
      try {
        const loaded = applySettings(fetched.loaded, settings);
        const roots = loaded.agentJson.skills.map((skill, index) => parseSkillReference(skill, `agent.json: skills[${index}]`));
        const skills = await resolveSkillClosure(roots, (reference) => findSkill(reference, loaded.dir, scratch));
        const bySkill = new Map(skills.map((skill) => [skill.reference.qualified, skill]));
        const prompts = new Map<string, InstalledSkillText>();
        for (const skill of skills) {
          const closure = await resolveSkillClosure([skill.reference], (reference) => Promise.resolve(bySkill.get(reference.qualified) as LoadedSkill));
          prompts.set(skill.reference.qualified, { prompt: skillsPrompt([skill]), requires: closure.slice(0, -1).map((entry) => entry.reference.qualified) });
        }
        const prepared = preparePackage(loaded, environment, prompts);
        const installed = await store.packages.list();
        const graph: GraphPackage[] = [...installed.filter((record) => record.slug !== loaded.slug).map((record) => ({ slug: record.slug, agentJson: AgentJsonSchema.parse(record.agentJson) })), { slug: loaded.slug, agentJson: loaded.agentJson }];
        const problems = emitGraphProblems(graph);
        if (problems.length > 0) throw new PackageError(`cannot install package "${loaded.slug}": ${problems.length === 1 ? (problems[0] ?? '') : `\n${problems.map((line) => `  ${line}`).join('\n')}`}`, { details: { problems } });
        // Refused here, before the plan is shown: a replaced skill would change the prompts of packages installed later.
        for (const skill of skills) await checkSkillInstallable(options.skillsDir, skill);
        const plan = installPlan(loaded, prepared, skills.map((skill) => `${skill.reference.qualified}@${skill.version}`), fetched.source, await leftWorkspace(loaded.slug));
        return { plan, loaded, prepared, skills, prompts, dispose };
      } catch (error) {
        await dispose();
        throw error;
      }
    },

    install: (source, installOptions) => oneAtATime(async () => {
      const checked = await installer.check(source, installOptions.settings);
      try {
        const { plan, loaded, prepared } = checked;
        if ((await store.packages.get(plan.slug)) !== undefined) throw new LoomError('PACKAGE_INSTALLED', 'user', `package "${plan.slug}" is installed already; uninstall it first: loom package uninstall ${plan.slug}`);
        if (kernel.list().some((agent) => agent.name === plan.slug)) throw new LoomError('AGENT_NAME_TAKEN', 'user', `cannot install package "${plan.slug}": an agent named "${plan.slug}" exists (the package's agent takes its slug)`);
        if (!(await installOptions.confirm(plan))) return undefined;
        const manifest = ManifestSchema.parse(prepared.manifest);
        const folder = join(options.packagesDir, plan.slug);
        const workspace = options.workspacesDir === undefined ? undefined : join(options.workspacesDir, plan.slug);
        // One that was there before is the owner's (an earlier agent's files): a failure keeps it.
        const workspaceExisted = workspace === undefined || (await exists(workspace));
        const addedSkills: string[] = [];
        let agentId: string | undefined;
        let recorded = false;
        try {
          for (const skill of checked.skills) {
            const installed = await installSkill(options.skillsDir, skill);
            if (installed.created) addedSkills.push(installed.folder);
          }
          const agent = await kernel.spawn(manifest);
          agentId = agent.id;
          await rm(folder, { recursive: true, force: true });
          await copyPackageFolder(loaded.dir, folder, 'package');
          const record: InstalledPackageRecord = {
            slug: plan.slug,
            qualifiedName: plan.qualifiedName,
            version: plan.version,
            agentId: agent.id,
            source: plan.source,
            persona: loaded.persona,
            agentJson: loaded.rawAgentJson as JsonObject,
            loomToml: loaded.loomToml as unknown as JsonObject,
            settings: [...(installOptions.settings ?? [])],
            skills: Object.fromEntries(checked.prompts),
            installedAt: options.clock.now(),
            lastFires: {},
          };
          await store.packages.create(record);
          recorded = true;
          await options.runtime.activate(plan.slug);
          await kernel.publish({ type: 'package-install', at: record.installedAt, agentId: agent.id, name: plan.slug, version: plan.version });
          return record;
        } catch (error) {
          // Only what this install added goes; what was there before stays.
          if (recorded) options.runtime.deactivate(plan.slug);
          const spawned = agentId;
          const agentGone = spawned === undefined || (await kernel.kill(spawned).then(
            () => true,
            () => false,
          ));
          await undo([
            () => (recorded ? store.packages.delete(plan.slug) : Promise.resolve()),
            () => rm(folder, { recursive: true, force: true }),
            // Its name and org folders too, when this version was all they held (rmdir leaves any other).
            ...addedSkills.map((added) => async () => {
              await rm(added, { recursive: true, force: true });
              await rmdir(dirname(added)).then(() => rmdir(dirname(dirname(added))));
            }),
            // Not while an agent that could not be killed still works in it.
            () => (workspaceExisted || !agentGone || workspace === undefined ? Promise.resolve() : rm(workspace, { recursive: true, force: true })),
          ]);
          throw error;
        }
      } finally {
        await checked.dispose();
      }
    }),

    uninstall: (slug) => oneAtATime(async () => {
      const record = await store.packages.get(slug);
      if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
      // The events it emits, as other packages name them; a source is compared after namespacing,
      // so another package's own dotted emit ("foo.done" in "x" is "x.foo.done") is not one of them.
      const emitted = new Set(Object.values(AgentJsonSchema.parse(record.agentJson).workflows).flatMap((binding) => (binding.emit === undefined ? [] : [namespacedEvent(slug, binding.emit)])));
      const others = (await store.packages.list()).filter((other) => other.slug !== slug);
      const listeners = others.flatMap((other) => {
        const agentJson = AgentJsonSchema.parse(other.agentJson);
        return Object.entries(agentJson.workflows).flatMap(([name, binding]) =>
          binding.trigger.type === 'event' && binding.trigger.sources.some((source) => emitted.has(namespacedSource({ slug: other.slug, agentJson }, source))) ? [`${other.slug}/${name}`] : [],
        );
      });
      if (listeners.length > 0) {
        throw new LoomError('PACKAGE_IN_USE', 'user', `cannot uninstall package "${slug}": ${listeners.join(', ')} run${listeners.length === 1 ? 's' : ''} on its events; uninstall ${listeners.length === 1 ? 'that' : 'those'} first`, { details: { listeners } });
      }
      options.runtime.deactivate(slug);
      await kernel.kill(record.agentId).catch((error: unknown) => {
        if (!(error instanceof LoomError && error.code === 'AGENT_NOT_FOUND')) throw error;
      });
      await store.packages.delete(slug);
      await rm(join(options.packagesDir, slug), { recursive: true, force: true });
      return record;
    }),
  };
  return installer;
}
