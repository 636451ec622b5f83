import { type Capability, describeCapability, findEscalations, isGranted } from '../capabilities/index.ts';
import type { InstalledSkillText } from '../contracts/index.ts';
import { PackageError } from '../errors/index.ts';
import { capabilitiesFromManifest, type ManifestCapabilities, ManifestCapabilitiesSchema, type ManifestInput } from '../manifest/index.ts';
import { knownModelAliases, type ModelTarget, resolveModelAlias } from '../models/index.ts';
import { formatMcpToolName } from '../tools/index.ts';
import type { LoadedPackage } from './load-package.ts';
import { type PackageActivity, skillWithoutVersion, USER_LOCAL_TIMEZONE } from './package-schema.ts';
import type { RunnableActivity, RunnableBinding } from './run-binding.ts';

/** What a package is checked against: the daemon's configuration. */
export interface PackageEnvironment {
  /** `[models.aliases]` (the built-in names are added). */
  aliases: Readonly<Record<string, ModelTarget>>;
  /** The names of `[[mcp_servers]]`. */
  mcpServers: readonly string[];
  /** What `"timezone": "user_local"` means here: `[scheduler].timezone`, else the system's. */
  userTimezone: string;
  /** `default_model`, the package agent's model when loom.toml names none. */
  defaultModel?: ModelTarget | undefined;
}

/** A package checked against the daemon: the agent to spawn and its bindings ready to run. */
export interface PreparedPackage {
  loaded: LoadedPackage;
  /** The IANA time zone its schedules and heartbeat windows are read in. */
  timezone: string;
  /** What the package's agent holds: loom.toml's `[capabilities]`, or what the activities need. */
  capabilities: ManifestCapabilities;
  /** Whether `capabilities` were derived from the activities (no `[capabilities]` in loom.toml). */
  derived: boolean;
  /** The manifest of the package's agent. */
  manifest: ManifestInput;
  /** Each binding, runnable (skills' instructions filled in when the skills were given). */
  bindings: ReadonlyMap<string, RunnableBinding>;
  /**
   * What installs but will not work as written, each with its JSON path: an activity naming an
   * MCP server that config.toml does not configure runs without that server's tools.
   */
  warnings: string[];
}

/** `provider/model`. */
const nameOf = (model: ModelTarget): string => `${model.provider}/${model.model}`;

/** A model an activity names: an alias, or `provider/model` written out. */
function activityModel(name: string, environment: PackageEnvironment): ModelTarget | undefined {
  const aliased = resolveModelAlias(name, environment.aliases);
  if (aliased !== undefined) return aliased;
  const slash = name.indexOf('/');
  const provider = name.slice(0, slash);
  const known = ['anthropic', 'openai', 'groq', 'openrouter', 'ollama'];
  return slash > 0 && known.includes(provider) ? ({ provider, model: name.slice(slash + 1) } as ModelTarget) : undefined;
}

/** What one activity needs, by itself: its commands, its MCP servers' tools, its model. */
function activityNeeds(activity: PackageActivity, model: ModelTarget | undefined): Capability[] {
  const needs: Capability[] = [];
  if (activity.cmds.length > 0) needs.push({ kind: 'tool_invoke', pattern: 'shell_exec' });
  for (const command of activity.cmds) needs.push({ kind: 'shell_exec', pattern: `${command} **` });
  // As the MCP client names the server's tools (`slack-notifier` → `mcp_slack_notifier_*`).
  for (const server of activity.mcps) needs.push({ kind: 'tool_invoke', pattern: formatMcpToolName(server, '*') });
  if (model !== undefined) needs.push({ kind: 'llm_query', pattern: nameOf(model) });
  return needs;
}

/**
 * Whether a wildcard tool pattern of loom.toml that is not scoped per step could still match
 * `shell_exec` or an MCP tool (`mcp_<server>_<tool>`): `"m*"`, `"*_*"`, `"s*"`.
 */
function mayNameScopedTool(pattern: string): boolean {
  const star = pattern.indexOf('*');
  const head = star === -1 ? pattern : pattern.slice(0, star);
  const compatible = (name: string): boolean => head.startsWith(name) || name.startsWith(head);
  // Exact names and `mcp_…` patterns are scoped per step already (see `isStepScoped`).
  if (star === -1 || pattern.startsWith(MCP_PREFIX)) return false;
  return isGranted([{ kind: 'tool_invoke', pattern }], { kind: 'tool_invoke', pattern: 'shell_exec' }) || compatible(MCP_PREFIX);
}

/** What every MCP tool's name starts with (spec/05). */
const MCP_PREFIX = 'mcp_';

/** Grants tied to one command, one MCP server or one model: each activity gets only its own. */
function isStepScoped(capability: Capability): boolean {
  if (capability.kind === 'shell_exec' || capability.kind === 'llm_query' || capability.kind === 'tool_all') return true;
  return capability.kind === 'tool_invoke' && (capability.pattern === 'shell_exec' || capability.pattern.startsWith('mcp_'));
}

/**
 * Checks a loaded package against the daemon (every model name resolves, loom.toml's
 * capabilities cover every activity; an MCP server config.toml lacks is a warning, since the
 * owner adds servers after installing), and works out what its agent holds and what each
 * activity may use: least privilege per step. An activity's limit is what
 * the package holds that is not tied to a command, an MCP server or a model, plus its own
 * commands (`"<cmd> **"`), its own servers' tools (`mcp_<server>_*`) and its own model.
 * @throws {PackageError} naming every problem, each with its JSON path.
 */
export function preparePackage(loaded: LoadedPackage, environment: PackageEnvironment, skills?: ReadonlyMap<string, InstalledSkillText>): PreparedPackage {
  const { agentJson, loomToml, slug } = loaded;
  const problems: string[] = [];
  const warnings: string[] = [];
  const aliases = knownModelAliases(environment.aliases);
  const requested = loomToml.capabilities;
  const requestedGrants = requested === undefined ? undefined : capabilitiesFromManifest(requested);
  const models = new Map<string, ModelTarget>();
  const needs: Capability[] = [];

  for (const [bindingName, binding] of Object.entries(agentJson.workflows)) {
    binding.activities.forEach((activity, index) => {
      const at = `agent.json: workflows.${bindingName}.activities[${index}]`;
      const model = activityModel(activity.model, environment);
      if (model === undefined)
        problems.push(
          `${at}.model: unknown model "${activity.model}"; expected one of ${aliases.join(', ')} (add it under [models.aliases] in config.toml), or "provider/model"`,
        );
      else models.set(activity.model, model);
      activity.mcps.forEach((server, serverIndex) => {
        if (!environment.mcpServers.includes(server)) {
          warnings.push(
            `${at}.mcps[${serverIndex}]: MCP server "${server}" is not configured (${environment.mcpServers.length === 0 ? 'config.toml configures none' : `config.toml configures ${environment.mcpServers.join(', ')}`}); the activity runs without its tools until you add it as [[mcp_servers]] name = "${server}" with its [mcp_servers.transport], as docs/packages.md shows, and restart the daemon`,
          );
        }
      });
      const own = activityNeeds(activity, model);
      needs.push(...own);
      if (requestedGrants !== undefined) {
        for (const need of own) {
          // A need is a pattern ("git **", "mcp_x_*"): covered, not matched as a value.
          if (findEscalations(requestedGrants, [need]).length > 0)
            problems.push(`${at}: needs ${describeCapability(need)}, which loom.toml's [capabilities] does not grant`);
        }
      }
    });
  }
  if (problems.length > 0) {
    throw new PackageError(
      `cannot load package "${slug}": ${problems.length === 1 ? (problems[0] ?? '') : `${problems.length} problems:\n${problems.map((line) => `  ${line}`).join('\n')}`}`,
      {
        details: { package: slug, problems },
      },
    );
  }

  // A broad tool pattern in loom.toml would hand every step what is scoped to one (another
  // step's MCP servers, the shell): refused, so each step keeps only its own.
  (requested?.tools ?? []).forEach((pattern, index) => {
    if (pattern !== '*' && mayNameScopedTool(pattern)) {
      problems.push(
        `loom.toml: [capabilities].tools[${index}]: "${pattern}" could match shell_exec or an MCP server's tools, which each activity gets only for its own "cmds" and "mcps"; name the other tools it means (e.g. "memory_*", "web_fetch")`,
      );
    }
  });
  if (problems.length > 0) throw new PackageError(`cannot load package "${slug}": ${problems.join('; ')}`, { details: { package: slug, problems } });

  const agentModel = loomToml.model ?? environment.defaultModel ?? [...models.values()][0];
  const capabilities = requested ?? deriveCapabilities(needs, agentModel);
  const grants = capabilitiesFromManifest(capabilities);
  const shared = grants.filter((grant) => !isStepScoped(grant));
  const timezone = agentJson.defaults.timezone === USER_LOCAL_TIMEZONE ? environment.userTimezone : agentJson.defaults.timezone;

  const bindings = new Map<string, RunnableBinding>();
  for (const [name, binding] of Object.entries(agentJson.workflows)) {
    const activities = binding.activities.map((activity): RunnableActivity => {
      const model = models.get(activity.model) as ModelTarget;
      // Its skills and what they depend on, each once, dependencies first.
      const names = [
        ...new Set(activity.skills.flatMap((skill) => [...(skills?.get(skillWithoutVersion(skill))?.requires ?? []), skillWithoutVersion(skill)])),
      ];
      const instructions = names.flatMap((name) => {
        const text = skills?.get(name)?.prompt;
        return text === undefined ? [] : [text];
      });
      return {
        id: activity.id,
        intent: activity.intent,
        steps: activity.steps,
        model,
        tokenBudget: activity.token_budget.max,
        retry: activity.on_error.retry,
        fallback: activity.on_error.fallback,
        instructions: instructions.length === 0 ? undefined : instructions.join('\n\n'),
        limit: [...shared, ...activityNeeds(activity, model)],
        mcpServers: activity.mcps,
      };
    });
    bindings.set(name, { package: slug, name, inputs: binding.inputs, activities, totalPerRun: binding.budget.total_per_run, emit: binding.emit });
  }

  const mcpServers = [...new Set(Object.values(agentJson.workflows).flatMap((binding) => binding.activities.flatMap((activity) => activity.mcps)))];
  const manifest: ManifestInput = {
    name: slug,
    version: loaded.version,
    description: loaded.description === '' ? `package ${loaded.qualifiedName ?? slug}` : loaded.description,
    module: 'builtin:assistant',
    ...(agentModel === undefined ? {} : { model: { ...(loomToml.model ?? agentModel), system_prompt: loaded.persona } }),
    capabilities,
    skills: agentJson.skills,
    mcp_servers: mcpServers,
    metadata: { package: slug, ...(loaded.qualifiedName === undefined ? {} : { qualified_name: loaded.qualifiedName }) },
    tags: ['package'],
  };
  return { loaded, timezone, capabilities, derived: requested === undefined, manifest, bindings, warnings };
}

/** The `[capabilities]` a package without loom.toml's asks for: what its activities need, and its agent's own model. */
function deriveCapabilities(needs: readonly Capability[], agentModel: ModelTarget | undefined): ManifestCapabilities {
  const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];
  const patterns = (kind: Capability['kind']): string[] => unique(needs.flatMap((need) => (need.kind === kind && 'pattern' in need ? [need.pattern] : [])));
  const llm = patterns('llm_query');
  return ManifestCapabilitiesSchema.parse({
    tools: patterns('tool_invoke'),
    shell: patterns('shell_exec'),
    llm_query: agentModel === undefined || llm.length === 0 ? llm : unique([...llm, nameOf(agentModel)]),
  });
}
