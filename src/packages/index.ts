/**
 * Agent packages (spec/04): AGENT.md + agent.json workflows whose bindings run on triggers, in
 * activities with budgets and error policies, and hand results on by emitting events.
 */
export { emitGraphProblems } from './emit-graph.ts';
export { isInstallCode, parseInstallCode } from './install-code.ts';
export { loadPackage } from './load-package.ts';
export { createPackageInstaller, installPlan } from './package-installer.ts';
export type { InstallPlan, PackageInstaller, PackageInstallerOptions } from './package-installer.ts';
export { createPackageService } from './package-service.ts';
export type { PackageService } from './package-service.ts';
export type { PackageRunView, PackageView } from './package-views.ts';
export { createPackageRuntime } from './package-runtime.ts';
export type { PackageRuntime, PackageRuntimeOptions } from './package-runtime.ts';
export { AgentJsonSchema, inWindow, parseDuration, parseWindow } from './package-schema.ts';
export type { PackageTrigger } from './package-schema.ts';
export { applySettings } from './package-settings.ts';
export { preparePackage } from './prepare-package.ts';
export type { PackageEnvironment } from './prepare-package.ts';
export { publishToRegistry } from './registry.ts';
export { offerInstalledSkills } from './offer-skills.ts';
export { createSkillOffers } from './skill-offers.ts';
export { describeSkillOrigin } from './skill-origin.ts';
export { checkPackageSkills } from './skill-finder.ts';
export { loadSkillFolder, parseSkillReference } from './skills.ts';
export { activityPrompt, runBinding, runToStart } from './run-binding.ts';
export type { ActivityFallback, RunEvent, RunnableActivity, RunnableBinding } from './run-binding.ts';
