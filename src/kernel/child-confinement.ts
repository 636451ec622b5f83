import { isAbsolute, join, normalize } from 'node:path/posix';
import { filePatternCovers, isGranted, normalizeFilePath, validateInheritance } from '../capabilities/index.ts';
import type { Capability, JsonValue } from '../contracts/index.ts';
import { CapabilityEscalationError } from '../errors/index.ts';
import {
  capabilitiesFromManifest,
  codeModuleOf,
  codeSettingsOf,
  DEFAULT_CODE_SETTINGS,
  type Manifest,
  manifestDefaults,
  PRIORITIES,
} from '../manifest/index.ts';
import { modelName } from '../models/index.ts';
import { confineAutonomous, confineEmergent, confineToolSettings } from './confine-settings.ts';
import { limit, limitOrNone, mergeExecPolicy, narrowAllowlist, type Report, skillCovers, union } from './confinement-rules.ts';
import { checkModels } from './confine-models.ts';
import { manifestModels } from './model-targets.ts';
import { confineSchedule } from './confine-schedule.ts';
import { type ConfinedParent, type ConfinementContext, realPathOf } from './confinement-context.ts';

/**
 * `confineChild`: the one definition of "a child never exceeds its parent", over every field of
 * its manifest (each field's sort is in `manifest-field-power.ts`).
 */

export type { ConfinedParent, ConfinementContext } from './confinement-context.ts';

/** A field of the child that exceeds its parent, in the manifest's words. */
export interface ConfinementProblem {
  field: string;
  problem: string;
}

/** The folder a child without `workspace` works in, inside its parent's. */
export const CHILD_WORKSPACES_FOLDER = 'agents';

const DEFAULT_MODEL_MAX_TOKENS = 4096;

/**
 * The child's manifest as it may run under `parent`: restrictions merged in, limits lowered
 * where the child left the default, workspace resolved to an absolute path, token cap
 * inherited. Throws nothing else; pure apart from reading `context`.
 *
 * @throws {CapabilityEscalationError} naming every field of `child` that exceeds `parent`;
 *   `details.fields` lists them as `{ field, problem }`, `details.uncovered` the capabilities.
 */
export function confineChild(parent: ConfinedParent, child: Manifest, context: ConfinementContext): Manifest {
  const problems: ConfinementProblem[] = [];
  const report = (field: string, problem: string): void => {
    problems.push({ field, problem });
  };
  const p = parent.manifest;
  const parentCaps = parent.capabilities;

  // Capabilities: each child grant covered by one of the parent's; a missing token or spending cap inherited.
  let capabilities = inheritCaps(p, child);
  let uncovered: JsonValue[] = [];
  try {
    validateInheritance(parentCaps, capabilitiesFromManifest(capabilities, child.profile));
  } catch (error) {
    if (!(error instanceof CapabilityEscalationError)) throw error;
    const listed = error.details?.['uncovered'];
    uncovered = Array.isArray(listed) ? listed : [];
    report('[capabilities]', error.message);
  }

  const parentWorkspace = normalize(context.workspaceOf({ name: parent.name, workspace: p.workspace }));
  const workspace = confineWorkspace(parentWorkspace, parent, child, context, report);
  checkModule(p, child, report);
  checkModels(parent, child, context, report);
  const schedule = confineSchedule(p, child, context, parentCaps, [parentWorkspace, workspace], report);
  const tools = confineToolSettings(p, child, report);
  const emergent = confineEmergent(p, child, report);
  const code = confineCode(p, child, report);

  const standard = manifestDefaults();
  // Each quota at most the parent's, a child's default taking the parent's; 0 is no limit, but for max_iterations.
  const quota = (key: keyof Manifest['resources'], rule: typeof limitOrNone): number =>
    rule(`[resources].${key}`, child.resources[key], p.resources[key], standard.resources[key], report);
  const resources = {
    max_tokens_per_hour: quota('max_tokens_per_hour', limitOrNone),
    max_cost_per_hour: quota('max_cost_per_hour', limitOrNone),
    max_iterations: quota('max_iterations', limit),
    max_tokens_per_day: quota('max_tokens_per_day', limitOrNone),
    max_cost_per_day: quota('max_cost_per_day', limitOrNone),
  };
  const model =
    child.model === undefined
      ? undefined
      : {
          ...child.model,
          max_tokens: limit('[model].max_tokens', child.model.max_tokens, p.model?.max_tokens ?? DEFAULT_MODEL_MAX_TOKENS, DEFAULT_MODEL_MAX_TOKENS, report),
        };
  // A child on the default model has no [model].max_tokens to lower: its token cap carries the parent's.
  const parentOutput = p.model?.max_tokens ?? DEFAULT_MODEL_MAX_TOKENS;
  if (child.model === undefined && parentOutput < DEFAULT_MODEL_MAX_TOKENS && (capabilities.llm_max_tokens ?? Number.POSITIVE_INFINITY) > parentOutput) {
    capabilities = { ...capabilities, llm_max_tokens: parentOutput };
  }
  const priorityRank = limit(
    'priority',
    PRIORITIES.indexOf(child.priority),
    PRIORITIES.indexOf(p.priority),
    PRIORITIES.indexOf(standard.priority),
    report,
    (rank) => `"${PRIORITIES[rank] ?? '?'}"`,
  );

  const autonomous = confineAutonomous(p, child, report);
  const tool_allowlist = narrowAllowlist('tool_allowlist', child.tool_allowlist, p.tool_allowlist, report);
  const mcp_servers = narrowAllowlist('mcp_servers', child.mcp_servers, p.mcp_servers, report);
  const skills = narrowAllowlist('skills', child.skills, p.skills, report, skillCovers);

  if (problems.length > 0) {
    const grants = problems.find((entry) => entry.field === '[capabilities]');
    const others = problems.filter((entry) => entry !== grants).map(({ field, problem }) => `${field} ${problem}`);
    const text = [
      grants?.problem,
      others.length === 0 ? undefined : `${grants === undefined ? 'it exceeds its parent in' : 'Other fields exceed the parent:'} ${others.join('; ')}`,
    ];
    throw new CapabilityEscalationError(
      `cannot spawn agent "${child.name}" as a child of "${parent.name}": ${text.filter((part) => part !== undefined).join(' ')}`,
      {
        details: { child: child.name, parent: parent.name, fields: problems.map((entry) => ({ ...entry })), uncovered },
      },
    );
  }

  const confined: Manifest = {
    ...child,
    capabilities,
    workspace,
    schedule,
    tools,
    resources,
    priority: PRIORITIES[priorityRank] ?? child.priority,
    tool_allowlist,
    tool_blocklist: union(p.tool_blocklist, child.tool_blocklist),
    mcp_servers,
    skills,
  };
  if (model !== undefined) confined.model = model;
  if (autonomous !== undefined) confined.autonomous = autonomous;
  if (emergent !== undefined) confined.emergent = emergent;
  if (code !== undefined) confined.code = code;
  const execPolicy = mergeExecPolicy(p.exec_policy, child.exec_policy);
  if (execPolicy !== undefined) confined.exec_policy = execPolicy;
  return confined;
}

/**
 * A token cap and a lifetime spending cap (`econ_spend`) only restrict, so a child that sets
 * neither runs under its parent's rather than being refused; the caps are written into the
 * child's manifest, where `show` displays them.
 */
function inheritCaps(parent: Manifest, child: Manifest): Manifest['capabilities'] {
  let capabilities = child.capabilities;
  for (const key of ['llm_max_tokens', 'econ_spend'] as const) {
    const cap = parent.capabilities[key];
    if (cap !== undefined && capabilities[key] === undefined) capabilities = { ...capabilities, [key]: cap };
  }
  return capabilities;
}

/**
 * The child's workspace, absolute. Without one it works in `agents/<name>` inside its parent's
 * workspace; a relative one is taken inside the parent's workspace. It must lie inside the
 * parent's workspace, or be a folder the parent may both read and write by its grants (the
 * folder itself and everything in it):
 * everything inside a workspace needs no grant, so the child may reach nothing there that the
 * parent cannot. Both are compared by their real paths (`context.realPath`), and the child's is
 * pinned to its own: a symbolic link in the parent's workspace (`repo/escape -> /`) cannot make
 * the whole disk the child's workspace. A link put in the pinned path later is the file tools'
 * to refuse (see `ToolAgent.pinnedWorkspace`).
 */
function confineWorkspace(parentWorkspace: string, parent: ConfinedParent, child: Manifest, context: ConfinementContext, report: Report): string {
  const written = child.workspace;
  const resolved =
    written === undefined
      ? join(parentWorkspace, CHILD_WORKSPACES_FOLDER, child.name)
      : written.startsWith('~') || isAbsolute(written)
        ? context.workspaceOf({ name: child.name, workspace: written })
        : join(parentWorkspace, written);
  const normal = normalizeFilePath(resolved);
  if (normal === undefined) {
    report('workspace', `${JSON.stringify(written)} does not resolve to an absolute path`);
    return resolved;
  }
  const real = realPathOf(context);
  const workspace = real(normal);
  const parentReal = real(parentWorkspace);
  const inside = workspace === parentReal || workspace.startsWith(`${parentReal === '/' ? '' : parentReal}/`);
  if (inside) return workspace;
  const everything = `${workspace === '/' ? '' : workspace}/*`;
  // The folder itself as well as what is in it: listing a workspace needs no grant either.
  const covered = (kind: 'file_read' | 'file_write'): boolean =>
    [workspace, everything].every((path) => parent.capabilities.some((capability) => capability.kind === kind && filePatternCovers(capability.pattern, path)));
  if (!covered('file_read') || !covered('file_write')) {
    report(
      'workspace',
      `${JSON.stringify(workspace)}${workspace === normal ? '' : ` (${JSON.stringify(normal)} through its symbolic links)`} lies outside the parent's workspace ${JSON.stringify(parentReal)} and outside what its [capabilities].file_read and file_write grant; ` +
        `leave workspace out (the child then works in ${JSON.stringify(join(parentWorkspace, CHILD_WORKSPACES_FOLDER, child.name))}) or choose a folder inside the parent's`,
    );
  }
  return workspace;
}

/** Built-in modules are Loom's own code; a `wasm:` or `python:` module only as the parent's own. */
function checkModule(parent: Manifest, child: Manifest, report: Report): void {
  if (child.module.startsWith('builtin:') || child.module === parent.module) return;
  report(
    'module',
    `${JSON.stringify(child.module)} is code the parent does not run (the parent runs ${JSON.stringify(parent.module)}); a child may use a builtin: module or its parent's own`,
  );
}

/**
 * A child running its parent's code module (`checkModule` refuses any other) stays within the
 * parent's `[code]` limits, under the parent's interpreter; a limit it leaves at its default
 * takes the parent's.
 */
function confineCode(parent: Manifest, child: Manifest, report: Report): Manifest['code'] {
  if (codeModuleOf(child) === undefined) return child.code;
  const mine = codeSettingsOf(child);
  const theirs = codeSettingsOf(parent);
  if (mine.interpreter !== theirs.interpreter)
    report('[code].interpreter', `${JSON.stringify(mine.interpreter)} is not the parent's ${JSON.stringify(theirs.interpreter)}`);
  const bound = (key: 'timeout_ms' | 'memory_mb' | 'max_reply_bytes'): number =>
    limit(`[code].${key}`, mine[key], theirs[key], DEFAULT_CODE_SETTINGS[key], report);
  return { timeout_ms: bound('timeout_ms'), memory_mb: bound('memory_mb'), max_reply_bytes: bound('max_reply_bytes'), interpreter: mine.interpreter };
}

/**
 * A child spawned in a limited step (a package activity, `ToolAgent.limit`), already confined by
 * its parent, held to the step as well: its capabilities covered by the step's `limit`, every
 * model it calls (primary or the default model, fallbacks, routed tiers, forged tools' judges) one
 * the limit's `llm_query` names, and its `mcp_servers` among the step's `mcpServers` (set to them
 * when it names none: the limit's `mcp_<server>_*` patterns also match servers whose names start
 * the same). Returns the manifest to store.
 * @throws {CapabilityEscalationError} naming what exceeds the step.
 */
export function confineToStep(
  child: Manifest,
  granted: readonly Capability[],
  step: { limit: readonly Capability[]; mcpServers?: readonly string[] | undefined },
  context: ConfinementContext,
): Manifest {
  const refusal = (why: string, details: Record<string, JsonValue>): CapabilityEscalationError =>
    new CapabilityEscalationError(`cannot spawn agent "${child.name}" in this step, which ${why}`, { details });
  try {
    validateInheritance(step.limit, granted);
  } catch (error) {
    if (!(error instanceof CapabilityEscalationError)) throw error;
    throw refusal(`is limited to what it names: ${error.message}`, error.details);
  }
  // A child calling another model would spend outside the step's model and budget.
  const models = manifestModels(child, context).flatMap(({ field, target }) => {
    const name = modelName(target);
    return isGranted(step.limit, { kind: 'llm_query', pattern: name }) ? [] : [`${field} calls model "${name}"`];
  });
  if (models.length > 0) throw refusal(`is limited to its own model: ${models.join('; ')}; give the child the step's model`, { models });
  const servers = step.mcpServers;
  if (servers === undefined) return child;
  const outside = child.mcp_servers.filter((server) => !servers.includes(server));
  if (outside.length > 0)
    throw refusal(
      `uses only the MCP servers it names (${servers.map((server) => `"${server}"`).join(', ') || 'none'}): mcp_servers names ${outside.map((server) => `"${server}"`).join(', ')}`,
      { mcpServers: outside },
    );
  return child.mcp_servers.length === 0 ? { ...child, mcp_servers: [...servers] } : child;
}
