import { Cron } from 'croner';
import { z } from 'zod';
import { type PatternCapabilityKind, patternProblem, TOOL_PROFILE_TOOLS, TOOL_PROFILES, toolsOutsideProfile } from '../capabilities/index.ts';

/**
 * The agent manifest: one zod schema, the single source of truth for every field, its type and
 * its default (spec/01, "Agent Manifest Format"). Our own format, so every object is strict:
 * an unknown key is an error that names the key.
 */

/** Model providers Loom can drive. `openai-compatible` needs a `base_url`. */
export const MODEL_PROVIDERS = ['anthropic', 'openai', 'groq', 'openrouter', 'ollama', 'openai-compatible'] as const;

/** Scheduling modes of spec/01. */
export const SCHEDULE_MODES = ['reactive', 'continuous', 'periodic', 'proactive'] as const;

/** Scheduling priorities. */
export const PRIORITIES = ['low', 'normal', 'high', 'critical'] as const;

/** Named tool profiles: a preset tool set an agent is granted by naming it (see `TOOL_PROFILE_TOOLS`). */
export { TOOL_PROFILES };

/** What becomes of wake-ups due while the daemon was down: one run late, every one, or none (decision 0046). */
export const CATCH_UP_POLICIES = ['once', 'all', 'skip'] as const;

/** Interval of a continuous agent when the manifest gives none. */
export const DEFAULT_INTERVAL_SECONDS = 60;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Refuses a name that looks like an id: the CLI takes either, so they must not collide. */
const notAnId = (name: string): boolean => !UUID_PATTERN.test(name);
const NOT_AN_ID = { error: 'expected a name, not a UUID (ids and names must not collide)' };

/**
 * A name another agent may already have: letters, digits, `.`, `_` and `-` (names first allowed a
 * dot, and agents stored then keep theirs), and not a UUID, since the CLI takes a name or an id.
 */
const AgentReferenceSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
    error: 'expected 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit',
  })
  .refine(notAnId, NOT_AN_ID);

/**
 * A new agent's name: it appears in URLs, tool names and folder names, so it is kept to letters,
 * digits, `_` and `-`, without the dot memory keys and package events split `<agent>.<key>` at
 * (decision 0006); and it may not look like an id, since the CLI takes either.
 */
export const AgentNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, {
    error:
      'expected 1 to 64 letters, digits, "_" or "-", starting with a letter or digit; no "." (memory keys and events name an agent as "<agent>.<key>", split at the first dot)',
  })
  .refine(notAnId, NOT_AN_ID);

const EnvVarNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name such as "ANTHROPIC_API_KEY"' });

/**
 * A `[capabilities]` list of `kind`'s patterns, each checked by `patternProblem`, so a malformed
 * one is an error at its entry: `[capabilities].network[0]: expected a host such as …`.
 */
function patternList(kind: PatternCapabilityKind) {
  const PatternSchema = z.string().superRefine((pattern, context) => {
    const problem = patternProblem(kind, pattern);
    if (problem !== undefined) {
      context.addIssue({ code: 'custom', message: problem, input: pattern });
    }
  });
  return z.array(PatternSchema).default([]);
}

const StringListSchema = z.array(z.string().min(1, { error: 'expected a non-empty string' })).default([]);

/**
 * One entry of a manifest's `skills`: a skill's name (`note-taker`) or its qualified reference,
 * `@org/skills/name`, optionally pinned, `@org/skills/name@1.0.0` (as packages write them).
 */
export const SKILL_ENTRY_PATTERN = /^(?:[a-z0-9]+(?:-[a-z0-9]+)*|@[a-z0-9][a-z0-9-]*\/skills\/[a-z0-9][a-z0-9-]*(?:@[0-9A-Za-z][0-9A-Za-z.+-]*)?)$/;

const SkillListSchema = z
  .array(
    z.string().regex(SKILL_ENTRY_PATTERN, {
      error:
        'expected a skill\'s name such as "note-taker" (lowercase letters, digits and single hyphens), or its qualified reference such as "@org/skills/note-taker" or "@org/skills/note-taker@1.0.0"',
    }),
  )
  .default([]);

const ModelFields = {
  provider: z.enum(MODEL_PROVIDERS).describe('Who serves the model.'),
  model: z.string().min(1, { error: 'expected a model name' }).describe('The model\'s name at that provider, e.g. `"claude-sonnet-4-5"`.'),
  api_key_env: EnvVarNameSchema.optional().describe(
    "The environment variable holding the key, when not the provider's usual one (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …).",
  ),
  base_url: z
    .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
    .optional()
    .describe("The server's address, overriding the provider's; required for `openai-compatible`."),
  structured_outputs: z
    .boolean()
    .optional()
    .describe(
      "Whether a structured reply (an orchestrating agent type's steps) sends its JSON schema to an OpenAI-compatible server (`response_format: json_schema`, constrained decoding) rather than asking for any JSON (`json_object`). On when left out for `ollama` and `openai-compatible` (vLLM, LM Studio, llama.cpp), off for `groq` and `openrouter`; a server that refuses it is sent `json_object` instead.",
    ),
};

function requireBaseUrlForCompatible(value: { provider: string; base_url?: string | undefined }, context: z.RefinementCtx): void {
  if (value.provider === 'openai-compatible' && value.base_url === undefined) {
    context.addIssue({
      code: 'custom',
      path: ['base_url'],
      message: 'required when provider = "openai-compatible" (the server\'s URL, e.g. "http://127.0.0.1:8000/v1")',
    });
  }
}

/** How an agent calls its model: `[model]`'s settings beside the model it names. */
const ModelSettings = {
  max_tokens: z.int().positive().default(4096).describe('The most tokens one model call may write.'),
  temperature: z.number().min(0).max(2).default(0.7).describe('Sampling temperature, 0–2.'),
  system_prompt: z.string().optional().describe("The agent's instructions."),
  cache: z
    .boolean()
    .optional()
    .describe(
      "Whether model calls use the provider's prompt cache (Anthropic cache breakpoints, OpenAI's prompt_cache_key): the tools, system prompt and history are then read from the cache at a fraction of the input price. On when left out; false turns it off.",
    ),
};

/** `[model]` that must name its model (provider and model), as a package's loom.toml writes it. */
export const NamedModelConfigSchema = z.strictObject({ ...ModelFields, ...ModelSettings }).superRefine(requireBaseUrlForCompatible);

/**
 * `[model]`: the model an agent thinks with and how. Without `provider` and `model` it names no
 * model: the agent runs on the daemon's default model (`default_model` in config.toml), with
 * these settings (`system_prompt`, `temperature`, `max_tokens`).
 */
export const ModelConfigSchema = z
  .strictObject({
    ...ModelFields,
    provider: ModelFields.provider.optional(),
    model: ModelFields.model.optional(),
    ...ModelSettings,
  })
  .superRefine((value, context) => {
    const neither = "or leave out both provider and model to run on the daemon's default model";
    if (value.provider !== undefined && value.model === undefined)
      context.addIssue({ code: 'custom', path: ['model'], message: `required with provider, e.g. model = "gpt-4o"; ${neither}` });
    if (value.provider === undefined && value.model !== undefined)
      context.addIssue({ code: 'custom', path: ['provider'], message: `required with model, e.g. provider = "openai"; ${neither}` });
    for (const key of ['api_key_env', 'base_url'] as const) {
      if (value.provider === undefined && value.model === undefined && value[key] !== undefined) {
        context.addIssue({
          code: 'custom',
          path: [key],
          message: "only used with the provider and model it belongs to; the default model's key and URL are set in config.toml",
        });
      }
    }
    requireBaseUrlForCompatible({ provider: value.provider ?? '', ...(value.base_url === undefined ? {} : { base_url: value.base_url }) }, context);
  });

/** `[model]` as a manifest holds it. */
export type ModelConfig = z.output<typeof ModelConfigSchema>;

/**
 * The model `[model]` names (provider, model, key variable and URL), or undefined when it names
 * none: then the agent runs on the daemon's default model.
 */
export function namedModel(
  model: Pick<ModelConfig, 'provider' | 'model' | 'api_key_env' | 'base_url' | 'structured_outputs'> | undefined,
): z.output<typeof FallbackModelSchema> | undefined {
  if (model?.provider === undefined || model.model === undefined) return undefined;
  return {
    provider: model.provider,
    model: model.model,
    api_key_env: model.api_key_env,
    base_url: model.base_url,
    ...(model.structured_outputs === undefined ? {} : { structured_outputs: model.structured_outputs }),
  };
}

/** `[[fallback_models]]`: tried in order when the primary model fails. Also how config names a model. */
export const FallbackModelSchema = z.strictObject(ModelFields).superRefine(requireBaseUrlForCompatible);

/** A model named by provider and model (plus key variable and URL), as config and fallbacks write it. */
export const ModelTargetSchema = FallbackModelSchema;

/** Trigger events fired by files appearing or changing under a glob `pattern`. */
export const FILE_TRIGGER_EVENTS = ['file_created', 'file_changed'] as const;

/** Trigger events fired by the kernel's lifecycle events (the `pattern`, when given, filters agent names). */
export const LIFECYCLE_TRIGGER_EVENTS = ['agent_spawned', 'agent_killed', 'agent_suspended', 'agent_resumed'] as const;

/** Every `[[schedule.triggers]]` event Loom runs. */
export const TRIGGER_EVENTS = [...FILE_TRIGGER_EVENTS, ...LIFECYCLE_TRIGGER_EVENTS] as const;

/** Events the seed names that Loom refuses at load, with why. */
const UNSUPPORTED_TRIGGER_EVENTS: Readonly<Record<string, string>> = {
  agent_message:
    'not supported by Loom: the kernel publishes no event for a message between agents; grant the sender [capabilities].agent_message to this agent and let it message it',
};

/** `[[schedule.triggers]]`: an event that wakes a proactive agent. */
export const TriggerSchema = z
  .strictObject({
    event: z
      .string()
      .superRefine((event, context) => {
        if ((TRIGGER_EVENTS as readonly string[]).includes(event)) return;
        const unsupported = UNSUPPORTED_TRIGGER_EVENTS[event];
        context.addIssue({
          code: 'custom',
          input: event,
          message: unsupported === undefined ? `unknown event "${event}"; expected one of ${TRIGGER_EVENTS.join(', ')}` : `"${event}" is ${unsupported}`,
        });
      })
      .describe(
        '`file_created` or `file_changed` (with a glob `pattern`, required), `agent_spawned`, `agent_killed`, `agent_suspended` or `agent_resumed` (the `pattern` filters agent names). Any other event is refused at load.',
      ),
    pattern: z.string().min(1).optional().describe("What the event must match: the files' glob for `file_*` (required), agent names for `agent_*`."),
    message: z.string().optional().describe('The message the agent is woken with.'),
  })
  .superRefine((trigger, context) => {
    if ((FILE_TRIGGER_EVENTS as readonly string[]).includes(trigger.event) && trigger.pattern === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['pattern'],
        message: `required when event = "${trigger.event}": the files to watch, e.g. pattern = "/data/inbox/*.json"`,
      });
    }
  });

/**
 * `[schedule.check]`: a tool call made before each scheduled wake-up, through the same gates as
 * the agent's own calls; the model is called only when its result changed (decision 0049).
 */
export const ScheduleCheckSchema = z.strictObject({
  tool: z
    .string()
    .min(1, { error: 'expected a tool name such as "shell_exec"' })
    .describe(
      "The tool to call, one the agent may call (its `[capabilities]` grant it, deny by default): `file_list` for a folder's state, `shell_exec` for a command's output, `web_http_request` for a URL's ETag, `web_fetch` for its content, `mcp_<server>_<tool>` for an MCP tool's result.",
    ),
  input: z.record(z.string(), z.json()).default({}).describe('The tool\'s input, e.g. `{ command = "git -C /repo rev-parse HEAD" }`.'),
});

function isValidCron(expression: string): boolean {
  try {
    new Cron(expression, { paused: true });
    return true;
  } catch {
    return false;
  }
}

/** `[schedule]`: when the agent runs. */
export const ScheduleSchema = z
  .strictObject({
    mode: z
      .enum(SCHEDULE_MODES)
      .default('reactive')
      .describe(
        '`reactive`: runs when messaged; `continuous`: woken every `interval_seconds`; `periodic`: at each time of `cron`; `proactive`: on each of `triggers`. A key for another mode is refused.',
      ),
    interval_seconds: z.int().positive().optional().describe('`continuous` only; 60 when left out.'),
    cron: z
      .string()
      .optional()
      .describe('`periodic` only, and required then, e.g. `"0 9 * * *"`; read in config.toml\'s `[scheduler].timezone` (UTC when unset).'),
    triggers: z.array(TriggerSchema).default([]).describe('`proactive` only, and at least one then: the events that wake the agent.'),
    catch_up: z
      .enum(CATCH_UP_POLICIES)
      .optional()
      .describe(
        "`continuous` and `periodic` only: what becomes of wake-ups due while the daemon was down. `once`: the latest is run late; `all`: each is run, oldest first; `skip`: none is run. Each is recorded (`loom agent runs`). Left out: config.toml's `[scheduler].catch_up` (`once`).",
      ),
    model: ModelTargetSchema.optional().describe(
      '`continuous` and `periodic` only: the model scheduled wake-ups run on (a cheaper one than `[model]`); messages still get `[model]`. It counts among the models the manifest names, so no `llm_query` grant is needed for it.',
    ),
    check: ScheduleCheckSchema.optional().describe(
      '`continuous` and `periodic` only: a tool call made before each wake-up; the model is called only when its result changed since the last run (the run is recorded as `unchanged` otherwise). See docs/agents.md#schedules.',
    ),
    catch_up_window_seconds: z
      .int()
      .positive()
      .optional()
      .describe(
        "`continuous` and `periodic` only: how old a missed wake-up may be and still be caught up; older ones are recorded as skipped. Left out: config.toml's `[scheduler].catch_up_window_seconds` (3600).",
      ),
  })
  .superRefine((schedule, context) => {
    if (schedule.mode === 'periodic' && schedule.cron === undefined) {
      context.addIssue({ code: 'custom', path: ['cron'], message: 'required when mode = "periodic", e.g. cron = "0 9 * * *"' });
    }
    if (schedule.cron !== undefined && schedule.mode !== 'periodic') {
      context.addIssue({ code: 'custom', path: ['cron'], message: `only used when mode = "periodic", but mode is "${schedule.mode}"` });
    }
    if (schedule.cron !== undefined && !isValidCron(schedule.cron)) {
      context.addIssue({ code: 'custom', path: ['cron'], message: `expected a cron expression such as "0 9 * * *", got "${schedule.cron}"` });
    }
    if (schedule.interval_seconds !== undefined && schedule.mode !== 'continuous') {
      context.addIssue({
        code: 'custom',
        path: ['interval_seconds'],
        message: `only used when mode = "continuous", but mode is "${schedule.mode}"`,
      });
    }
    if (schedule.mode === 'proactive' && schedule.triggers.length === 0) {
      context.addIssue({
        code: 'custom',
        path: ['triggers'],
        message: 'required when mode = "proactive": at least one [[schedule.triggers]], e.g. event = "file_created" with pattern = "/data/inbox/*.json"',
      });
    }
    for (const key of ['catch_up', 'catch_up_window_seconds', 'model', 'check'] as const) {
      if (schedule[key] !== undefined && schedule.mode !== 'continuous' && schedule.mode !== 'periodic') {
        context.addIssue({ code: 'custom', path: [key], message: `only used when mode = "continuous" or "periodic", but mode is "${schedule.mode}"` });
      }
    }
    if (schedule.triggers.length > 0 && schedule.mode !== 'proactive') {
      context.addIssue({ code: 'custom', path: ['triggers'], message: `only used when mode = "proactive", but mode is "${schedule.mode}"` });
    }
  })
  .transform((schedule) =>
    schedule.mode === 'continuous' && schedule.interval_seconds === undefined ? { ...schedule, interval_seconds: DEFAULT_INTERVAL_SECONDS } : schedule,
  );

/** `[resources]`: quotas. A cost limit of 0 means no limit. */
export const ResourcesSchema = z.strictObject({
  max_tokens_per_hour: z.int().nonnegative().default(1_000_000).describe('Tokens over a rolling hour; 0 = no limit.'),
  max_cost_per_hour: z.number().nonnegative().default(0).describe('USD over a rolling hour; 0 = no limit.'),
  max_iterations: z.int().positive().default(50).describe('Model calls in one turn.'),
  max_tokens_per_day: z
    .int()
    .nonnegative()
    .default(0)
    .describe(
      "Tokens per day (in config.toml's `[scheduler].timezone`, UTC when unset) past which scheduled wake-ups are skipped until the next day; 0 = no limit. Messages are not stopped.",
    ),
  max_cost_per_day: z.number().nonnegative().default(0).describe('USD per day past which scheduled wake-ups are skipped until the next day; 0 = no limit.'),
});

/** Why the seed's peer-to-peer and payment grants are refused: nothing in Loom would honour them. */
const PEER_NETWORK =
  'not supported by Loom: it has no peer-to-peer network (agents reach other daemons through A2A and MCP, under [capabilities].network); remove the key';
const PAYMENTS = "not supported by Loom: it has no payment system; [capabilities].econ_spend caps what an agent's model calls may cost; remove the key";
const LISTENING = 'not supported by Loom: no tool opens a listening socket (the daemon serves HTTP, MCP and A2A for its agents); remove the key';

/**
 * A `[capabilities]` key of the seed that Loom refuses whatever its value: accepting it would
 * promise a grant (or a protection) that nothing enforces. Its message says why.
 */
function unsupportedGrant(reason: string) {
  return z
    .unknown()
    .optional()
    .superRefine((value, context) => {
      if (value !== undefined) context.addIssue({ code: 'custom', message: reason });
    })
    .describe(`Refused at load: ${reason.replace(/; remove the key$/, '')}.`);
}

/**
 * `[capabilities]`: what the agent is granted. Everything not listed is denied. Each key maps
 * to one capability kind (see `capabilitiesFromManifest`); every pattern is checked for its kind
 * at load (`patternProblem`: a host for `network`, a path for `file_*`, a command for `shell`).
 */
export const ManifestCapabilitiesSchema = z.strictObject({
  tools: patternList('tool_invoke').describe('Tools it may call (`ToolInvoke`); `"*"` is every tool, e.g. `["web_fetch", "file_*"]`.'),
  memory_read: patternList('memory_read').describe('Memory keys it may read, e.g. `["*"]`.'),
  memory_write: patternList('memory_write').describe('Memory keys it may write, e.g. `["self.*"]`.'),
  network: patternList('net_connect').describe(
    'Hosts it may connect to: `host`, `host:port`, `[ipv6]:port` (no CIDR ranges), e.g. `["*.wikipedia.org", "api.openai.com:443"]`.',
  ),
  shell: patternList('shell_exec').describe(
    'Commands it may run, matched argument by argument (`*` within one argument, a bare `**` for any number of arguments, `"*"` alone for any command), e.g. `["git **"]`; `["python3"]` for a `python:` agent.',
  ),
  agent_spawn: z.boolean().default(false).describe('May spawn child agents (within its own capabilities).'),
  agent_message: patternList('agent_message').describe('Agents it may message, e.g. `["summarizer"]`.'),
  agent_kill: patternList('agent_kill').describe('Agents it may kill, e.g. `["helper-*"]`.'),
  file_read: patternList('file_read').describe('Paths it may read, e.g. `["/data/*"]`.'),
  file_write: patternList('file_write').describe('Paths it may write, e.g. `["/data/out/*"]`.'),
  net_listen: unsupportedGrant(LISTENING),
  llm_query: patternList('llm_query').describe('Models it may call, e.g. `["anthropic/*"]`.'),
  llm_max_tokens: z.int().positive().optional().describe('A cap on its tokens (none = no cap).'),
  env_read: patternList('env_read').describe('Environment variables it may read, e.g. `["GITHUB_*"]`.'),
  ofp_discover: unsupportedGrant(PEER_NETWORK),
  ofp_connect: unsupportedGrant(PEER_NETWORK),
  ofp_advertise: unsupportedGrant(PEER_NETWORK),
  econ_spend: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      "A hard cap in USD on what its model calls, and those of every agent it spawns and they spawn in turn (killed ones included), may cost over its whole life: a call of any of them whose estimated cost is more than what is left is refused (none = no cap; a child without one gets its parent's). Kept with the hourly quotas; a model with no known price counts as free.",
    ),
  econ_earn: unsupportedGrant(PAYMENTS),
  econ_transfer: unsupportedGrant(PAYMENTS),
});

/**
 * `[tools.<name>]`: per-tool settings. `timeout_seconds` is understood by the tool runner; the
 * other keys belong to the tool, so any JSON value is accepted for them.
 */
export const ToolConfigSchema = z
  .object({ timeout_seconds: z.number().positive().optional().describe("The tool's time limit (60 s when left out).") })
  .catchall(z.json());

/** `[routing]`: pick a model tier by the complexity of each request. */
export const RoutingSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Score each request and pick a tier.'),
    frontier_threshold: z.number().min(0).max(1).default(0.8).describe('A score at least this is served by the `frontier` tier.'),
    smart_threshold: z.number().min(0).max(1).default(0.5).describe('At least this, `smart`; the thresholds must be ordered balanced ≤ smart ≤ frontier.'),
    balanced_threshold: z.number().min(0).max(1).default(0.3).describe('At least this, `balanced`; below it, `fast`.'),
  })
  .superRefine((routing, context) => {
    if (!(routing.balanced_threshold <= routing.smart_threshold && routing.smart_threshold <= routing.frontier_threshold)) {
      context.addIssue({
        code: 'custom',
        path: ['smart_threshold'],
        message: `expected balanced_threshold <= smart_threshold <= frontier_threshold, got ${routing.balanced_threshold}, ${routing.smart_threshold}, ${routing.frontier_threshold}`,
      });
    }
  });

/** `[autonomous]`: guardrails for agents that run unattended. */
export const AutonomousSchema = z.strictObject({
  approval_required_for: StringListSchema.describe("Tool names whose every call waits for a person's approval."),
  max_actions_per_cycle: z
    .int()
    .positive()
    .default(100)
    .describe(
      "The most tool calls in one unattended cycle (a scheduled wake-up of a continuous, periodic or proactive agent): the next is not run and the cycle ends. A person's messages are not capped. A child's is at most its parent's.",
    ),
  idle_timeout_seconds: z
    .int()
    .positive()
    .default(3600)
    .describe(
      "A continuous, periodic or proactive agent whose wake-ups take no action (no tool call) for this long is suspended at the end of the wake-up that finds it so, with the reason in the audit log; resuming it starts the time again. A child's is at most its parent's.",
    ),
});

/**
 * `[exec_policy]`: a per-agent override that can only take away. A field left out does not
 * restrict; `false` forbids the action even where a capability grants it.
 */
export const ExecPolicySchema = z.strictObject({
  allow_shell: z.boolean().default(true).describe('`false`: no shell command, whatever `[capabilities].shell` grants.'),
  allow_network: z.boolean().default(true).describe('`false`: no network, whatever `[capabilities].network` grants.'),
  allow_file_write: z.boolean().default(true).describe('`false`: no file write, whatever `[capabilities].file_write` grants.'),
});

/** The agent types of spec/03, as `module` names them (`builtin:chat` is the assistant's old name). */
export const BUILTIN_MODULES = [
  'builtin:assistant',
  'builtin:chat',
  'builtin:delegate',
  'builtin:workflow',
  'builtin:chain-of-thought',
  'builtin:eventlog',
] as const;

const ManagedAgentsSchema = z.array(AgentReferenceSchema).default([]);

/** `[delegate]`: a router that hands each request to the best of its managed agents (spec/03). */
export const DelegateSchema = z.strictObject({
  /** The agents it may route to; empty: every agent its `agent_message` grants reach. */
  managed_agents: ManagedAgentsSchema.describe('The agents it may hand work to; empty: every agent its `agent_message` grants reach.'),
  /** How long a delegated agent may take before the delegation is cancelled. */
  delegation_timeout_seconds: z
    .int()
    .positive()
    .default(180)
    .describe('How long a delegated turn may take before it is cancelled (counted from when the hand-over runs, not the wait for a person).'),
});

/** `[workflow]`: a planner that delegates tasks and checks their results (spec/03). */
export const WorkflowSchema = z.strictObject({
  managed_agents: ManagedAgentsSchema.describe('The agents it may hand work to; empty: every agent its `agent_message` grants reach.'),
  max_task_attempts: z.int().min(1).max(20).default(3).describe('Tries per task before it is blocked.'),
  max_replans: z.int().min(0).max(20).default(3).describe('Times the plan may be redone.'),
  max_parallel_tasks: z.int().min(1).max(16).default(1).describe('Ready tasks delegated at once.'),
  delegation_timeout_seconds: z
    .int()
    .positive()
    .default(180)
    .describe('How long a delegated turn may take before it is cancelled (counted from when the hand-over runs, not the wait for a person).'),
});

/** `[chain_of_thought]`: assess, plan, execute, synthesize until confident enough (spec/03). */
export const ChainOfThoughtSchema = z
  .strictObject({
    max_loops: z.int().min(1).max(32).default(8).describe('Synthesize-and-check rounds before it accepts what it has.'),
    max_steps: z.int().min(1).max(20).default(5).describe('Steps in a plan.'),
    initial_confidence_threshold: z
      .number()
      .min(0)
      .max(1)
      .default(0.75)
      .describe('The confidence the first loop needs; the bar falls each loop towards the minimum.'),
    min_confidence_threshold: z.number().min(0).max(1).default(0.4).describe('The confidence the last loop needs; at most the initial threshold.'),
    network_timeout_seconds: z
      .int()
      .positive()
      .default(180)
      .describe(
        'How long one model call may take (the assessment, the plan, each step, the synthesis); a call still going then is cancelled and the turn fails, naming this setting.',
      ),
  })
  .superRefine((settings, context) => {
    if (settings.min_confidence_threshold > settings.initial_confidence_threshold) {
      context.addIssue({
        code: 'custom',
        path: ['min_confidence_threshold'],
        message: `must not exceed initial_confidence_threshold (${settings.initial_confidence_threshold})`,
      });
    }
  });

/** `[compaction]`: when and how an agent's conversation is summarised (spec/03 "Chat History Compaction"). */
export const CompactionSchema = z.strictObject({
  enabled: z.boolean().default(true).describe('Summarise older messages when the history grows past the threshold.'),
  /** The most recent messages, never summarised. */
  keep_last_n: z.int().min(1).default(20).describe('The most recent messages, never summarised (the new message included).'),
  /** Compact past this share of the context window. */
  threshold: z.number().gt(0).max(1).default(0.75).describe('Compact past this share of the context window.'),
  /** The context window in tokens; default: the model's (`[context_windows]` of config.toml, else 128,000). */
  max_context_tokens: z
    .int()
    .positive()
    .optional()
    .describe("The context window in tokens; default: the model's (`[context_windows]` of config.toml, else 128,000)."),
});

/** The host APIs a sandboxed forged tool may be given (spec/02), each also named in the tool's `allowlist`. */
export const SANDBOX_APIS = ['fetch', 'fs.readFile', 'crypto'] as const;

const JUDGE_MODEL_ERROR =
  'expected "<provider>/<model>" (e.g. "openai/gpt-4o-mini", provider one of anthropic, openai, groq, openrouter, ollama) or a model alias such as "claude-haiku"';

/** A judge's model: `provider/model` or an alias (resolved by the kernel). */
const JudgeModelSchema = z
  .string()
  .regex(/^(?:(?:anthropic|openai|groq|openrouter|ollama)\/[^\s/][^\s]*|[A-Za-z0-9][A-Za-z0-9._-]*)$/, { error: JUDGE_MODEL_ERROR });

/** A host in `fetch_domain_allowlist`: a name, or `*.` and a name for its subdomains. */
const FetchDomainSchema = z.string().regex(/^(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/, {
  error: 'expected a host name such as "api.example.com" or "*.example.com" (no scheme, port or path)',
});

/**
 * `[emergent]`: the agent may forge tools at run time (spec/02), when its capabilities also grant
 * the tool `forge_tool`. `emergent = true` is short for an empty table.
 */
export const EmergentSchema = z.preprocess(
  (value) => (value === true ? {} : value === false ? { enabled: false } : value),
  z.strictObject({
    enabled: z.boolean().default(true).describe('`false` turns forging off.'),
    max_session_tools: z.int().min(0).max(100).default(10).describe('Forged tools one session may hold.'),
    max_agent_tools: z.int().min(0).max(1000).default(50).describe('Tools the agent may keep in its agent tier.'),
    sandbox_timeout_ms: z.int().min(10).max(60_000).default(5000).describe("A sandboxed call's time limit."),
    sandbox_memory_mb: z.int().min(8).max(1024).default(128).describe("A sandbox isolate's memory limit."),
    /** Forge requests (refused ones too) an agent may make in an hour; 0: none. */
    max_forge_attempts_per_hour: z.int().min(0).max(10_000).default(20).describe('Forge requests (refused ones too) in an hour; 0: none.'),
    /** Tool calls one top-level call may make through its toolbox (compose steps, sandbox bridges), all levels together. */
    max_nested_calls: z
      .int()
      .min(1)
      .max(10_000)
      .default(50)
      .describe('Tool calls one top-level call may make through its toolbox (compose steps, sandbox bridges), all levels together.'),
    judge_model: JudgeModelSchema.optional().describe(
      "The model that judges a forged tool: `provider/model` or an alias; default config.toml's `[default_model]` (none: every forge is refused).",
    ),
    promotion_judge_model: JudgeModelSchema.optional().describe('The second judge of the panel that promotes a tool to the agent tier.'),
    promotion_threshold: z
      .strictObject({
        uses: z.int().min(1).default(5).describe('Successful calls before the panel is asked.'),
        confidence: z.number().min(0).max(1).default(0.8).describe('The confidence the panel must reach.'),
      })
      .prefault({})
      .describe('When a session tool is put to the promotion panel.'),
    allowed_sandbox_apis: z
      .array(z.enum(SANDBOX_APIS))
      .default([])
      .describe('Host APIs a sandboxed tool may be given, when its own allowlist also names them.'),
    fetch_domain_allowlist: z.array(FetchDomainSchema).default([]).describe("Hosts a sandboxed tool's `fetch` may reach."),
    persist_sandbox_source: z.boolean().default(false).describe('Keep sandboxed code at rest (needed for export and the agent tier).'),
  }),
);

/**
 * `[code]`: the limits of a code agent's module (`wasm:` or `python:`). A child running its
 * parent's module stays within the parent's limits and interpreter.
 */
export const CodeSchema = z.strictObject({
  /** Wall clock per message, host calls included. */
  timeout_ms: z.int().min(100).max(3_600_000).default(30_000).describe('Wall clock per message, host calls included.'),
  /** The most memory a `wasm:` module may grow to (a Python process is not held to it). */
  memory_mb: z.int().min(1).max(4096).default(64).describe('The most memory a `wasm:` module may grow to (a Python process is not held to it).'),
  /** The largest reply (and host call) a module may send, in bytes. */
  max_reply_bytes: z
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(1_000_000)
    .describe('The largest reply (and host call) a module may send, in bytes.'),
  /** The program a `python:` module runs under, by name on PATH or absolute. */
  interpreter: z.string().min(1).default('python3').describe('The program a `python:` module runs under, by name on PATH or absolute.'),
});

/** `[code]` of a validated manifest, every default filled in. */
export type CodeSettings = z.output<typeof CodeSchema>;

/** `[code]` with every default, for agents that leave it out. */
export const DEFAULT_CODE_SETTINGS: CodeSettings = CodeSchema.parse({});

/** Which module each agent-type table belongs to. */
const TYPE_TABLES = { delegate: 'builtin:delegate', workflow: 'builtin:workflow', chain_of_thought: 'builtin:chain-of-thought' } as const;

/** The whole manifest. */
export const ManifestSchema = z
  .strictObject({
    name: AgentNameSchema.default('unnamed').describe(
      'Unique among live agents. Letters, digits, `_`, `-`; at most 64; not a UUID. No `.`: memory keys and package events name an agent as `<agent>.<key>`, split at the first dot (an agent stored with one before keeps its name; other agents can no longer read its memory).',
    ),
    version: z
      .string()
      .regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/, { error: 'expected a semantic version such as "0.1.0"' })
      .default('0.1.0')
      .describe('Semantic version.'),
    description: z.string().default('').describe('What the agent does.'),
    author: z.string().default('').describe('Who wrote it.'),
    module: z
      .string()
      .regex(/^(?:builtin:[a-z][a-z0-9_-]*|wasm:.+\.wasm|python:.+\.py)$/, {
        error: 'expected "builtin:<name>", "wasm:<path>.wasm" or "python:<path>.py"',
      })
      .default('builtin:assistant')
      .describe(
        'The agent type: `builtin:assistant` (the agent loop; `builtin:chat` is its old name), `builtin:delegate`, `builtin:workflow`, `builtin:chain-of-thought` or `builtin:eventlog`; or a code agent: `wasm:<path>.wasm`, `python:<path>.py`, the path relative to the manifest file.',
      ),
    schedule: ScheduleSchema.prefault({}).describe(
      'When the agent runs: when messaged (`reactive`, the default), every few seconds, on a cron schedule, or on events.',
    ),
    model: ModelConfigSchema.optional().describe(
      "The model the agent thinks with, and how. Without `provider` and `model` it names no model: the agent runs on the daemon's default model with these settings (most examples do; name both to pin a model). Left out: the daemon's default model.",
    ),
    fallback_models: z.array(FallbackModelSchema).default([]).describe('Tried in order when the model fails.'),
    resources: ResourcesSchema.prefault({}).describe('Quotas.'),
    priority: z
      .enum(PRIORITIES)
      .default('normal')
      .describe(
        "Its place in the queue when agents' model calls wait for a slot (config.toml's `[models].max_concurrent_calls`): critical > high > normal > low, first come first served among equals; a waiting call climbs one priority for every four slots given meanwhile, so none starves. A child's is at most its parent's.",
      ),
    capabilities: ManifestCapabilitiesSchema.prefault({}).describe(
      'What the agent is granted; everything else is refused (nothing is granted by default). See docs/capabilities.md.',
    ),
    profile: z
      .enum(TOOL_PROFILES)
      .optional()
      .describe(
        `A named tool set it is granted: ${TOOL_PROFILES.map((name) => `\`${name}\` (${TOOL_PROFILE_TOOLS[name].join(', ')})`).join('; ')}. \`[capabilities].tools\` may narrow it, never widen it. Grants the tools only: the hosts, commands and files they reach still need their \`[capabilities]\`. See docs/capabilities.md.`,
      ),
    tools: z
      .record(z.string().min(1), ToolConfigSchema)
      .default({})
      .describe("Per-tool settings, `[tools.<name>]`: `timeout_seconds`, plus the tool's own keys (any value)."),
    skills: SkillListSchema.describe(
      "Skill allowlist (empty = all installed): the installed skills whose instructions go in the agent's system prompt, each named `name` (the one org's skill of that name), `@org/skills/name` (its latest installed version) or `@org/skills/name@version`, with the skills they depend on. Their instructions go in whole, in this order (all installed: by qualified name), within 32 KB; past it a skill is listed by name and description. A named skill that is not installed is warned about at spawn and update; the agent runs without it. A child's are within its parent's. See docs/manifest.md#skills.",
    ),
    mcp_servers: StringListSchema.describe('MCP server allowlist (empty = all connected servers).'),
    metadata: z.record(z.string(), z.json()).default({}).describe('Your own key–values.'),
    tags: StringListSchema.describe('Discovery tags.'),
    routing: RoutingSchema.optional().describe("Pick a model tier by request complexity; config.toml's `[routing.<tier>]` says which model serves each tier."),
    autonomous: AutonomousSchema.optional().describe('Guardrails for agents that run unattended.'),
    workspace: z.string().min(1).optional().describe("The agent's working folder (`~` expanded); default `LOOM_HOME/workspaces/<name>`."),
    generate_identity_files: z
      .boolean()
      .default(false)
      .describe(
        '`true`: the identity files (SOUL.md, IDENTITY.md, USER.md, TOOLS.md, MEMORY.md, AGENTS.md, HEARTBEAT.md) missing from the workspace are written from the manifest when the agent starts, never over a file that exists, and the system prompt is read from them at each turn (SOUL.md in place of `system_prompt`; at most 32 KB of each). See docs/identity-files.md.',
      ),
    exec_policy: ExecPolicySchema.optional().describe('Can only take away: a field left out does not restrict, `false` forbids even what a capability grants.'),
    tool_allowlist: StringListSchema.describe('Only these tools (empty = no restriction).'),
    tool_blocklist: StringListSchema.describe('Removed after the allowlist.'),
    delegate: DelegateSchema.optional().describe('A delegate\'s settings (`module = "builtin:delegate"` only).'),
    workflow: WorkflowSchema.optional().describe('A workflow\'s settings (`module = "builtin:workflow"` only).'),
    chain_of_thought: ChainOfThoughtSchema.optional().describe('A chain-of-thought agent\'s settings (`module = "builtin:chain-of-thought"` only).'),
    compaction: CompactionSchema.prefault({}).describe('When and how the conversation is summarised (every type that keeps one).'),
    emergent: EmergentSchema.optional().describe(
      'The agent may forge tools at run time, when its capabilities also grant the tool `forge_tool`. `emergent = true` is short for an empty table. See docs/forged-tools.md.',
    ),
    code: CodeSchema.optional().describe("A code agent's limits. Only with a `wasm:` or `python:` module."),
  })
  .superRefine((manifest, context) => {
    if (manifest.profile !== undefined) {
      const outside = toolsOutsideProfile(manifest.profile, manifest.capabilities.tools);
      if (outside.length > 0) {
        context.addIssue({
          code: 'custom',
          path: ['capabilities', 'tools'],
          message: `${outside.map((tool) => `"${tool}"`).join(', ')} ${outside.length === 1 ? 'is' : 'are'} not in profile "${manifest.profile}" (${TOOL_PROFILE_TOOLS[manifest.profile].join(', ')}); tools may narrow a profile, not widen it: choose a wider profile, or leave profile out and list the tools`,
        });
      }
    }
    if (manifest.code !== undefined && manifest.module.startsWith('builtin:')) {
      context.addIssue({
        code: 'custom',
        path: ['code'],
        message: `only used with a code module (module = "wasm:<path>.wasm" or "python:<path>.py"), but module is "${manifest.module}"`,
      });
    }
    if (manifest.module.startsWith('builtin:') && !(BUILTIN_MODULES as readonly string[]).includes(manifest.module)) {
      context.addIssue({
        code: 'custom',
        path: ['module'],
        message: `unknown built-in module "${manifest.module}"; expected one of ${BUILTIN_MODULES.join(', ')}`,
      });
    }
    for (const [table, module] of Object.entries(TYPE_TABLES)) {
      if (manifest[table as keyof typeof TYPE_TABLES] !== undefined && manifest.module !== module) {
        context.addIssue({ code: 'custom', path: [table], message: `only used when module = "${module}", but module is "${manifest.module}"` });
      }
    }
  });

/** A validated manifest with every default filled in. */
export type Manifest = z.output<typeof ManifestSchema>;

let defaults: Manifest | undefined;

/**
 * A manifest with every field at its default, its optional `[autonomous]` and `[emergent]`
 * sections present at theirs: what confining a child compares against. Made when first asked
 * (the first parse builds the whole schema's checks, which a start with no child never needs).
 */
export function manifestDefaults(): Manifest {
  return (defaults ??= ManifestSchema.parse({ autonomous: {}, emergent: {} }));
}

/** A manifest as an author may write it: every field with a default is optional. */
export type ManifestInput = z.input<typeof ManifestSchema>;

/** `[emergent]` of a validated manifest, every default filled in. */
export type EmergentSettings = NonNullable<Manifest['emergent']>;

/** The `[capabilities]` block of a validated manifest. */
export type ManifestCapabilities = z.output<typeof ManifestCapabilitiesSchema>;

/** The top-level keys of a manifest. */
export const MANIFEST_KEYS: ReadonlySet<string> = new Set(Object.keys(ManifestSchema.shape));
