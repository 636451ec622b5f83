/**
 * Agent packages (spec/04): AGENT.md + agent.json workflows whose bindings run on triggers, in
 * activities with budgets and error policies, and hand results on by emitting events.
 */
export { emitGraphProblems, namespacedSource } from './emit-graph.ts';
export type { GraphPackage } from './emit-graph.ts';
export { isInstallCode, parseInstallCode } from './install-code.ts';
export { loadPackage, loadPackageFolder, LoomTomlSchema, parseAgentJson, SLUG_PATTERN } from './load-package.ts';
export type { LoadedPackage, LoomToml } from './load-package.ts';
export { createPackageInstaller, installPlan } from './package-installer.ts';
export type { CheckedPackage, InstalledSkill, InstallPlan, PackageInstaller, PackageInstallerOptions } from './package-installer.ts';
export { createPackageService } from './package-service.ts';
export type { PackageService } from './package-service.ts';
export { toBindingWireView, toPackageRunView, toPackageView } from './package-views.ts';
export type { ActivityRunView, BindingWireView, PackageRunView, PackageView } from './package-views.ts';
export { createPackageRuntime, preparedFromRecord } from './package-runtime.ts';
export type { BindingView, PackageRuntime, PackageRuntimeOptions } from './package-runtime.ts';
export { AgentJsonSchema, cronProblem, FALLBACKS, inWindow, parseDuration, parseWindow, USER_LOCAL_TIMEZONE } from './package-schema.ts';
export type { AgentJson, ClockWindow, PackageActivity, PackageBinding, PackageTrigger } from './package-schema.ts';
export { applySettings } from './package-settings.ts';
export { preparePackage } from './prepare-package.ts';
export type { PackageEnvironment, PreparedPackage } from './prepare-package.ts';
export { publishToRegistry, resolveFromRegistries } from './registry.ts';
export { composeSkillsPrompt, offerInstalledSkills } from './offer-skills.ts';
export { createSkillOffers } from './skill-offers.ts';
export { describeSkillOrigin } from './skill-origin.ts';
export { checkPackageSkills } from './skill-finder.ts';
export { loadSkillFolder, parseSkillReference } from './skills.ts';
export type { SkillOrigin } from './skill-origin.ts';
export { activityPrompt, namespacedEvent, runBinding } from './run-binding.ts';
export type { ActivityFallback, BindingRunParts, RunEvent, RunnableActivity, RunnableBinding } from './run-binding.ts';
