import { describeCapability } from '../capabilities/index.ts';
import { capabilitiesFromManifest } from '../manifest/index.ts';
import { describeSkillOrigin, type InstallPlan, type PackageRunView, type PackageTrigger, type PackageView } from '../packages/index.ts';
import { formatTable } from './format.ts';

/** A trigger in a few words: `schedule 0 7 * * 1-5`, `heartbeat 30m 08:00-18:00`, `event a.b, c.d`, `manual`. */
export function describeTrigger(trigger: PackageTrigger, sources?: readonly string[]): string {
  switch (trigger.type) {
    case 'schedule':
      return `schedule "${trigger.cron}"`;
    case 'heartbeat':
      return `heartbeat every ${trigger.interval}${trigger.window === undefined ? '' : ` within ${trigger.window}`}`;
    case 'event':
      return `on ${(sources ?? trigger.sources).join(', ')}`;
    case 'manual':
      return 'manual';
  }
}

/** The plan's skills: each with where it comes from and its digest, when they were looked up; else their names. */
function skillLines(plan: InstallPlan): string[] {
  if (plan.skillSources.length === 0) return [`  skills:    ${plan.skills.length === 0 ? 'none' : plan.skills.join(', ')}`];
  return [
    '  skills (where each comes from, and the digest of its files):',
    ...plan.skillSources.map(
      (skill) =>
        `    ${skill.skill} ${describeSkillOrigin(skill.origin)}, digest ${skill.digest}${skill.installed ? ' (installed already, the same files)' : ''}`,
    ),
  ];
}

/** What installing would do, for the owner to agree to. */
export function formatInstallPlan(plan: InstallPlan): string {
  const grants = capabilitiesFromManifest(plan.capabilities).map(describeCapability);
  const lines = [
    `Package ${plan.qualifiedName ?? plan.slug} ${plan.version} (from ${plan.source})`,
    `  agent:     ${plan.slug}`,
    plan.model === null
      ? undefined
      : `  model:     ${plan.model.name}${plan.model.baseUrl === null ? '' : ` at ${plan.model.baseUrl}`}${plan.model.apiKeyEnv === null ? '' : `, key from $${plan.model.apiKeyEnv}`}${plan.model.fromPackage ? " (named by the package's loom.toml)" : ''}`,
    `  time zone: ${plan.timezone}`,
    plan.pricing.model === undefined && plan.pricing.cost === undefined
      ? undefined
      : `  pricing:   ${plan.pricing.model ?? '?'} ${plan.pricing.cost === undefined ? '' : `$${plan.pricing.cost}`} (shown only; Loom charges nothing)`,
    ...skillLines(plan),
    plan.workspace === null
      ? undefined
      : `  workspace: ${plan.workspace.path} exists and holds ${plan.workspace.files} ${plan.workspace.files === 1 ? 'file' : 'files'} from before; the agent can read them`,
    '  bindings:',
    ...plan.bindings.map(
      (binding) =>
        `    ${binding.name}: ${describeTrigger(binding.trigger)}${binding.emit === null ? '' : ` → emits ${binding.emit}`} (${binding.costEstimate})`,
    ),
    `  capabilities it asks for${plan.derived ? ' (derived from its activities)' : ' (loom.toml)'}:`,
    ...(grants.length === 0 ? ['    none'] : grants.map((grant) => `    ${grant}`)),
    ...plan.warnings.map((warning) => `  warning: ${warning}`),
  ];
  return `${lines.filter((line) => line !== undefined).join('\n')}\n`;
}

/** `loom package list` as a table. */
export function formatPackageList(packages: readonly PackageView[]): string {
  if (packages.length === 0) return 'No packages installed. Install one with: loom package install <folder|.tgz|AGNT-XXXX-XXXX>\n';
  return formatTable(
    ['PACKAGE', 'VERSION', 'STATE', 'BINDINGS', 'NEXT FIRE'],
    packages.map((pkg) => {
      const next = pkg.bindings.flatMap((binding) => (binding.next_fire_at === null ? [] : [binding.next_fire_at])).sort()[0];
      return [pkg.slug, pkg.version, pkg.active ? 'active' : 'inactive', String(pkg.bindings.length), next ?? '-'];
    }),
  );
}

/** `loom package show`: the package, its bindings with their next fire times, its capabilities. */
export function formatPackage(pkg: PackageView, capabilities?: readonly string[]): string {
  const lines = [
    `${pkg.qualified_name ?? pkg.slug} ${pkg.version}  (${pkg.active ? 'active' : 'inactive'})`,
    `agent:     ${pkg.agent} (${pkg.agent_id})`,
    `source:    ${pkg.source}`,
    `installed: ${pkg.installed_at}`,
    `skills:    ${pkg.skills.length === 0 ? 'none' : pkg.skills.join(', ')}`,
    ...(pkg.settings.length === 0 ? [] : [`settings:  ${pkg.settings.join(', ')}`]),
    '',
    formatTable(
      ['BINDING', 'TRIGGER', 'NEXT FIRE', 'EMITS', 'BUDGET'],
      pkg.bindings.map((binding) => [
        binding.running ? `${binding.name} (running)` : binding.name,
        describeTrigger(binding.trigger, binding.sources),
        binding.next_fire_at ?? '-',
        binding.emit ?? '-',
        `${binding.total_per_run} tokens, ${binding.cost_estimate}`,
      ]),
    ).trimEnd(),
    ...(capabilities === undefined ? [] : ['', 'capabilities:', ...(capabilities.length === 0 ? ['  none'] : capabilities.map((line) => `  ${line}`))]),
  ];
  return `${lines.join('\n')}\n`;
}

/** `loom package runs` as a table. */
export function formatRuns(runs: readonly PackageRunView[]): string {
  if (runs.length === 0) return 'No runs yet.\n';
  return formatTable(
    ['STARTED', 'PACKAGE', 'BINDING', 'TRIGGER', 'STATUS', 'TOKENS', 'COST', 'ACTIVITIES'],
    runs.map((run) => [
      run.started_at,
      run.package,
      run.binding,
      run.trigger,
      run.status,
      String(run.input_tokens + run.output_tokens),
      `$${run.cost_usd.toFixed(4)}`,
      run.activities.length === 0 ? (run.error ?? '-') : run.activities.map((activity) => `${activity.id}:${activity.status}`).join(' '),
    ]),
  );
}

/** One finished run, activity by activity (what `loom package run` prints). */
export function formatRun(run: PackageRunView): string {
  const lines = [`run ${run.id}: ${run.package}/${run.binding} ${run.status}${run.emitted === null ? '' : `, emitted ${run.emitted}`}`];
  for (const activity of run.activities) {
    lines.push(
      `  ${activity.id}: ${activity.status}${activity.attempts > 1 ? ` after ${activity.attempts} attempts` : ''}, ${activity.input_tokens + activity.output_tokens} tokens, $${activity.cost_usd.toFixed(4)}${activity.error === null ? '' : ` (${activity.error})`}`,
    );
  }
  if (run.error !== null) lines.push(`  ${run.error}`);
  const output = [...run.activities].reverse().find((activity) => activity.output !== null)?.output;
  if (output !== undefined && output !== null) lines.push('', output);
  return `${lines.join('\n')}\n`;
}
