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
import { copyPackageFolder, packageFolderDigest } from './package-folder.ts';
import { applySettings } from './package-settings.ts';
import { type PackageEnvironment, type PreparedPackage, preparePackage } from './prepare-package.ts';
import { resolveFromRegistries } from './registry.ts';
import { createSkillFinder, type SkillRequester } from './skill-finder.ts';
import { namespacedEvent } from './run-binding.ts';
import { type SkillOrigin, skillOriginPath, type SourcedSkill } from './skill-origin.ts';
import {
  checkSkillInstallable,
  installedSkillFolder,
  installSkill,
  loadSkillFolder,
  parseSkillReference,
  resolveSkillClosure,
  skillsPrompt,
} from './skills.ts';

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
  /**
   * Where each of {@link skills} comes from, in the same order (docs/packages.md, "Where a skill
   * comes from"). Empty when the skills were named but not looked up (`loom package validate`).
   */
  skillSources: PlannedSkill[];
  bindings: { name: string; description: string; trigger: PackageTrigger; emit: string | null; costEstimate: string }[];
  pricing: { model?: string | undefined; cost?: number | undefined };
  timezone: string;
  /**
   * The agent's workspace (`workspaces/<slug>` in the Loom home) when it exists already and holds
   * files: left by an uninstalled package or a killed agent of that name (both keep it). The new
   * agent can read them, so the owner is told before agreeing. Null otherwise.
   */
  workspace: { path: string; files: number } | null;
  /** What installs but will not work as written until the owner acts (see {@link PreparedPackage.warnings}). */
  warnings: string[];
  /**
   * sha256 over the plan and what it was made from (agent.json, AGENT.md, loom.toml): install
   * given the digest of the plan a person agreed to refuses a package that changed since.
   */
  digest: string;
}

/** One skill of a plan: a skill version is its name, its version and the digest of its files. */
export interface PlannedSkill {
  /** `@org/skills/name@version`. */
  skill: string;
  /** SHA-256 over the skill folder's files (`packageFolderDigest`). */
  digest: string;
  /** Where these files come from: the package itself, a registry, or (an installed copy) what its record says. */
  origin: SkillOrigin;
  /** True when the same files are installed already: that copy is used, nothing is written. */
  installed: boolean;
}

/** A package loaded and checked, ready to install (or only reported, by `validate`). */
export interface CheckedPackage {
  plan: InstallPlan;
  loaded: LoadedPackage;
  prepared: PreparedPackage;
  skills: SourcedSkill[];
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
  install(
    source: string,
    options: { settings?: readonly string[]; confirm: (plan: InstallPlan) => boolean | Promise<boolean> },
  ): Promise<InstalledPackageRecord | undefined>;
  /**
   * Stops its triggers, kills its agent and removes it (its runs stay in the history).
   * @throws {LoomError} `PACKAGE_NOT_FOUND`; `PACKAGE_IN_USE` when another package's event trigger listens to it.
   */
  uninstall(slug: string): Promise<InstalledPackageRecord>;
  /**
   * Installs a skill by its install code (`SKIL-XXXX-XXXX`, spec/04), looked up in the
   * registries, with the skills it depends on (from registries, or installed copies a registry's
   * skill may take). Skills carry no capabilities: nothing is asked. A version installed already
   * with the same files is kept as it is.
   * @throws {PackageError} for a malformed code, a package's code, no registry, a code no registry
   *   lists, a dependency that cannot be found, or an installed copy with other files.
   */
  installSkill(code: string): Promise<InstalledSkill[]>;
}

/** A skill {@link PackageInstaller.installSkill} installed (or found installed already), dependencies first. */
export interface InstalledSkill {
  /** `@org/skills/name@version`. */
  skill: string;
  origin: SkillOrigin;
  /** False when the same files were installed already. */
  created: boolean;
}

const QUALIFIED_AGENT = /^@[a-z0-9][a-z0-9-]*\/agents\/[a-z0-9][a-z0-9-]*(?:@[0-9A-Za-z.+-]+)?$/;

function modelOf(prepared: PreparedPackage, loaded: LoadedPackage): InstallPlan['model'] {
  const model = namedModel(prepared.manifest.model);
  if (model === undefined) return null;
  // The key it will really send: its own variable, or the provider's default one.
  const endpoint = modelEndpoint({ provider: model.provider, model: model.model, api_key_env: model.api_key_env, base_url: model.base_url });
  return {
    name: `${model.provider}/${model.model}`,
    baseUrl: model.base_url ?? null,
    apiKeyEnv: endpoint.keyVariable,
    fromPackage: loaded.loomToml.model !== undefined,
  };
}

/** What {@link installPlan} is made from. */
export interface InstallPlanOptions {
  loaded: LoadedPackage;
  prepared: PreparedPackage;
  skills: readonly (string | PlannedSkill)[];
  /** Where the package came from (a folder, a registry reference). */
  source: string;
  workspace?: InstallPlan['workspace'] | undefined;
}

/**
 * The plan of a loaded, prepared package (what `validate` and `install` show); `skills` are the
 * skills as the install resolved them (origin and digest each), or only their names (`validate`
 * looks none up); `workspace` is the agent's workspace left from before, when the daemon has one
 * (`validate` reads no daemon).
 */
export function installPlan(options: InstallPlanOptions): InstallPlan {
  const { loaded, prepared, skills, source, workspace = null } = options;
  const plan: Omit<InstallPlan, 'digest'> = {
    slug: loaded.slug,
    qualifiedName: loaded.qualifiedName ?? null,
    version: loaded.version,
    source,
    capabilities: prepared.capabilities,
    model: modelOf(prepared, loaded),
    derived: prepared.derived,
    skills: skills.map((skill) => (typeof skill === 'string' ? skill : skill.skill)),
    skillSources: skills.filter((skill) => typeof skill !== 'string'),
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
    warnings: prepared.warnings,
  };
  const digest = createHash('sha256')
    .update(JSON.stringify({ plan, agentJson: loaded.rawAgentJson, persona: loaded.persona, loomToml: loaded.loomToml }))
    .digest('hex');
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

/**
 * Removes a skill version an install added (a failed install's undoing): its folder, with its name
 * and org folders when this version was all they held (rmdir leaves any other), and its record,
 * with the .origins folders it alone filled.
 */
async function removeAddedSkill(added: { folder: string; origin: string }): Promise<void> {
  const { folder, origin } = added;
  await rm(folder, { recursive: true, force: true });
  await rmdir(dirname(folder))
    .then(() => rmdir(dirname(dirname(folder))))
    .catch(() => undefined);
  await rm(origin, { force: true });
  await rmdir(dirname(origin))
    .then(() => rmdir(dirname(dirname(origin))))
    .then(() => rmdir(dirname(dirname(dirname(origin)))));
}

/** Runs each cleanup step, whatever the others do: one that fails must not keep the rest from running. */
async function undo(steps: readonly (() => Promise<unknown>)[]): Promise<void> {
  for (const step of steps) await step().catch(() => undefined);
}

/** Creates the installer. */
export function createPackageInstaller(options: PackageInstallerOptions): PackageInstaller {
  const { kernel, store, environment } = options;
  const fetchOptions = options.fetch === undefined ? {} : { fetch: options.fetch };

  const findSkill = createSkillFinder({ registries: options.registries, skillsDir: options.skillsDir, ...fetchOptions });

  async function fetchPackage(source: string): Promise<{ loaded: LoadedPackage; dispose: () => Promise<void>; source: string; registry: string | null }> {
    if (isInstallCode(source) || QUALIFIED_AGENT.test(source)) {
      if (isInstallCode(source) && parseInstallCode(source).kind === 'SKIL') {
        throw new PackageError(
          `cannot install "${source}" as a package: it is a skill's install code (SKIL-…); a package's starts with AGNT-. Install the skill with: loom package install ${parseInstallCode(source).code} (POST /api/packages/skills)`,
        );
      }
      if (options.registries.length === 0) throw new PackageError(`cannot install "${source}": config.toml lists no [[registries]] to look it up in`);
      const found = await resolveFromRegistries(options.registries, source, fetchOptions);
      const slug = found.name.split('/').at(-1);
      const { loaded, dispose } = await loadPackageArchive(found.bytes, `${found.name}@${found.version}`, slug === undefined ? {} : { slug });
      if (loaded.qualifiedName !== undefined && loaded.qualifiedName !== found.name) {
        await dispose();
        throw new PackageError(
          `cannot install "${source}": the registry lists it as ${found.name}, but its loom.toml names ${loaded.qualifiedName}; the archive is not the package it claims to be`,
        );
      }
      return {
        loaded: { ...loaded, qualifiedName: loaded.qualifiedName ?? found.name, version: found.version },
        dispose,
        source: `${found.name}@${found.version} (${found.code}, ${found.registry})`,
        registry: found.registry,
      };
    }
    return { ...(await loadPackage(source)), source, registry: null };
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
        const requester: SkillRequester = { dir: loaded.dir, name: loaded.qualifiedName ?? loaded.slug, source: fetched.source, registry: fetched.registry };
        const skills = await resolveSkillClosure(roots, (reference) => findSkill(reference, requester, scratch));
        const bySkill = new Map(skills.map((skill) => [skill.reference.qualified, skill]));
        const prompts = new Map<string, InstalledSkillText>();
        for (const skill of skills) {
          const closure = await resolveSkillClosure([skill.reference], (reference) => Promise.resolve(bySkill.get(reference.qualified) as SourcedSkill));
          prompts.set(skill.reference.qualified, { prompt: skillsPrompt([skill]), requires: closure.slice(0, -1).map((entry) => entry.reference.qualified) });
        }
        const prepared = preparePackage(loaded, environment, prompts);
        const installed = await store.packages.list();
        const graph: GraphPackage[] = [
          ...installed
            .filter((record) => record.slug !== loaded.slug)
            .map((record) => ({ slug: record.slug, agentJson: AgentJsonSchema.parse(record.agentJson) })),
          { slug: loaded.slug, agentJson: loaded.agentJson },
        ];
        const problems = emitGraphProblems(graph);
        if (problems.length > 0)
          throw new PackageError(
            `cannot install package "${loaded.slug}": ${problems.length === 1 ? (problems[0] ?? '') : `\n${problems.map((line) => `  ${line}`).join('\n')}`}`,
            { details: { problems } },
          );
        // Refused here, before the plan is shown: a replaced skill would change the prompts of packages installed later.
        const planned: PlannedSkill[] = [];
        for (const skill of skills) {
          await checkSkillInstallable(options.skillsDir, skill);
          // Checked just above: what is installed at its version, if anything, holds the same files.
          const installed = await exists(installedSkillFolder(options.skillsDir, skill));
          planned.push({ skill: `${skill.reference.qualified}@${skill.version}`, digest: skill.digest, origin: skill.origin, installed });
        }
        const plan = installPlan({ loaded, prepared, skills: planned, source: fetched.source, workspace: await leftWorkspace(loaded.slug) });
        return { plan, loaded, prepared, skills, prompts, dispose };
      } catch (error) {
        await dispose();
        throw error;
      }
    },

    install: (source, installOptions) =>
      oneAtATime(async () => {
        const checked = await installer.check(source, installOptions.settings);
        try {
          const { plan, loaded, prepared } = checked;
          if ((await store.packages.get(plan.slug)) !== undefined)
            throw new LoomError(
              'PACKAGE_INSTALLED',
              'user',
              `package "${plan.slug}" is installed already; uninstall it first: loom package uninstall ${plan.slug}`,
            );
          if (kernel.list().some((agent) => agent.name === plan.slug))
            throw new LoomError(
              'AGENT_NAME_TAKEN',
              'user',
              `cannot install package "${plan.slug}": an agent named "${plan.slug}" exists (the package's agent takes its slug)`,
            );
          if (!(await installOptions.confirm(plan))) return undefined;
          const manifest = ManifestSchema.parse(prepared.manifest);
          const folder = join(options.packagesDir, plan.slug);
          const workspace = options.workspacesDir === undefined ? undefined : join(options.workspacesDir, plan.slug);
          // One that was there before is the owner's (an earlier agent's files): a failure keeps it.
          const workspaceExisted = workspace === undefined || (await exists(workspace));
          const addedSkills: { folder: string; origin: string }[] = [];
          let agentId: string | undefined;
          let recorded = false;
          try {
            for (const skill of checked.skills) {
              const installed = await installSkill(options.skillsDir, skill, { installedBy: plan.slug, installedAt: options.clock.now() });
              if (installed.created) addedSkills.push({ folder: installed.folder, origin: skillOriginPath(options.skillsDir, skill) });
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
            const agentGone =
              spawned === undefined ||
              (await kernel.kill(spawned).then(
                () => true,
                () => false,
              ));
            await undo([
              () => (recorded ? store.packages.delete(plan.slug) : Promise.resolve()),
              () => rm(folder, { recursive: true, force: true }),
              // Each skill version it added, with the folders and records it alone filled.
              ...addedSkills.map((added) => () => removeAddedSkill(added)),
              // Not while an agent that could not be killed still works in it.
              () => (workspaceExisted || !agentGone || workspace === undefined ? Promise.resolve() : rm(workspace, { recursive: true, force: true })),
            ]);
            throw error;
          }
        } finally {
          await checked.dispose();
        }
      }),

    installSkill: (code) =>
      oneAtATime(async () => {
        const parsed = parseInstallCode(code);
        if (parsed.kind !== 'SKIL')
          throw new PackageError(`cannot install "${code}" as a skill: it is a package's install code (AGNT-…); a skill's starts with SKIL-`);
        if (options.registries.length === 0)
          throw new PackageError(`cannot install skill "${parsed.code}": config.toml lists no [[registries]] to look it up in`);
        const found = await resolveFromRegistries(options.registries, parsed.code, fetchOptions);
        const scratch: string[] = [];
        try {
          const folder = await mkdtemp(join(tmpdir(), 'loom-skill-'));
          scratch.push(folder);
          const root = await loadSkillFolder(await unpackArchive(found.bytes, folder), parseSkillReference(found.name, parsed.code).org);
          if (root.reference.qualified !== found.name || root.version !== found.version) {
            throw new PackageError(
              `cannot install skill "${parsed.code}": the registry "${found.registry}" lists it as ${found.name}@${found.version}, but its SKILL.md is ${root.reference.qualified}@${root.version}; the archive is not the skill it claims to be`,
            );
          }
          const sourced: SourcedSkill = {
            ...root,
            digest: await packageFolderDigest(root.dir, 'skill'),
            origin: { kind: 'registry', registry: found.registry, code: found.code, sha256: found.sha256 },
          };
          const requester: SkillRequester = {
            dir: null,
            name: found.name,
            source: `${found.name}@${found.version} (${found.code}, ${found.registry})`,
            registry: found.registry,
          };
          const skills = await resolveSkillClosure([root.reference], (reference) =>
            reference.qualified === found.name && (reference.version ?? found.version) === found.version
              ? Promise.resolve(sourced)
              : findSkill(reference, requester, scratch),
          );
          for (const skill of skills) await checkSkillInstallable(options.skillsDir, skill);
          const installed: InstalledSkill[] = [];
          const added: { folder: string; origin: string }[] = [];
          try {
            for (const skill of skills) {
              const { folder: written, created } = await installSkill(options.skillsDir, skill, { installedBy: parsed.code, installedAt: options.clock.now() });
              if (created) added.push({ folder: written, origin: skillOriginPath(options.skillsDir, skill) });
              installed.push({ skill: `${skill.reference.qualified}@${skill.version}`, origin: skill.origin, created });
            }
          } catch (error) {
            // All or nothing, as a package's install: what this one added goes, what was there stays.
            await undo(added.map((each) => () => removeAddedSkill(each)));
            throw error;
          }
          return installed;
        } finally {
          await Promise.all(scratch.map((folder) => rm(folder, { recursive: true, force: true })));
        }
      }),

    uninstall: (slug) =>
      oneAtATime(async () => {
        const record = await store.packages.get(slug);
        if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
        // The events it emits, as other packages name them; a source is compared after namespacing,
        // so another package's own dotted emit ("foo.done" in "x" is "x.foo.done") is not one of them.
        const emitted = new Set(
          Object.values(AgentJsonSchema.parse(record.agentJson).workflows).flatMap((binding) =>
            binding.emit === undefined ? [] : [namespacedEvent(slug, binding.emit)],
          ),
        );
        const others = (await store.packages.list()).filter((other) => other.slug !== slug);
        const listeners = others.flatMap((other) => {
          const agentJson = AgentJsonSchema.parse(other.agentJson);
          return Object.entries(agentJson.workflows).flatMap(([name, binding]) =>
            binding.trigger.type === 'event' && binding.trigger.sources.some((source) => emitted.has(namespacedSource({ slug: other.slug, agentJson }, source)))
              ? [`${other.slug}/${name}`]
              : [],
          );
        });
        if (listeners.length > 0) {
          throw new LoomError(
            'PACKAGE_IN_USE',
            'user',
            `cannot uninstall package "${slug}": ${listeners.join(', ')} run${listeners.length === 1 ? 's' : ''} on its events; uninstall ${listeners.length === 1 ? 'that' : 'those'} first`,
            { details: { listeners } },
          );
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
