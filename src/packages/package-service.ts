import type { JsonObject, Store } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { InstalledSkill, InstallPlan, PackageInstaller } from './package-installer.ts';
import type { PackageRuntime } from './package-runtime.ts';
import { type PackageRunView, type PackageView, toPackageRunView, toPackageView } from './package-views.ts';

/** What every door (the API, the CLI without a daemon) does with packages, in the API's views. */
export interface PackageService {
  list(): Promise<PackageView[]>;
  /** @throws {LoomError} `PACKAGE_NOT_FOUND` */
  show(slug: string): Promise<PackageView>;
  /** Loads and checks a package against this daemon; installs nothing. */
  check(source: string, settings?: readonly string[]): Promise<InstallPlan>;
  /**
   * Installs it (the owner agreed already: the CLI asks before calling this). Given the digest of
   * the plan the owner saw, a package that changed since (an edited folder, a newer version in a
   * registry) is refused with `PACKAGE_CHANGED`.
   */
  install(source: string, settings?: readonly string[], digest?: string): Promise<PackageView>;
  uninstall(slug: string): Promise<{ slug: string; agent_id: string }>;
  /** Installs a skill by its install code (`SKIL-XXXX-XXXX`), with its dependencies (see `PackageInstaller.installSkill`). */
  installSkill(code: string): Promise<InstalledSkill[]>;
  /** Runs a binding now and resolves with the finished run. */
  run(slug: string, binding: string, inputs?: JsonObject): Promise<PackageRunView>;
  /** Runs newest first, optionally of one package. */
  runs(query?: { package?: string; limit?: number }): Promise<PackageRunView[]>;
}

/** The package service over the installer, the runtime and the store. */
export function createPackageService(parts: {
  installer: PackageInstaller;
  runtime: PackageRuntime;
  store: Pick<Store, 'packages' | 'packageRuns'>;
}): PackageService {
  const { installer, runtime, store } = parts;
  const find = async (slug: string) => {
    const record = await store.packages.get(slug);
    if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
    return record;
  };
  return {
    list: async () => Promise.all((await store.packages.list()).map((record) => toPackageView(record, runtime))),
    show: async (slug) => toPackageView(await find(slug), runtime),
    async check(source, settings = []) {
      const checked = await installer.check(source, settings);
      await checked.dispose();
      return checked.plan;
    },
    async install(source, settings = [], digest) {
      const record = await installer.install(source, {
        settings,
        confirm: (plan) => {
          if (digest !== undefined && plan.digest !== digest) {
            throw new LoomError(
              'PACKAGE_CHANGED',
              'user',
              `not installed: package "${plan.slug}" changed since its plan was shown (now ${plan.qualifiedName ?? plan.slug}@${plan.version}); run the command again to see what it asks for now`,
            );
          }
          return true;
        },
      });
      if (record === undefined) throw new LoomError('PACKAGE_NOT_INSTALLED', 'user', 'the package was not installed');
      return toPackageView(record, runtime);
    },
    async uninstall(slug) {
      const record = await installer.uninstall(slug);
      return { slug: record.slug, agent_id: record.agentId };
    },
    installSkill: (code) => installer.installSkill(code),
    run: async (slug, binding, inputs = {}) => toPackageRunView(await runtime.run(slug, binding, inputs)),
    runs: async (query = {}) => {
      if (query.package !== undefined) await find(query.package);
      return (await store.packageRuns.list(query)).map(toPackageRunView);
    },
  };
}
