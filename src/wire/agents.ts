/**
 * An agent's state as the store keeps it: `running` or `suspended` (a killed agent is deleted, not
 * kept in a third state).
 */
export type AgentState = 'running' | 'suspended';

/** When an agent runs (`[schedule].mode`): when messaged, every few seconds, at cron times, or on events. */
export type ScheduleMode = 'reactive' | 'continuous' | 'periodic' | 'proactive';

/** One capability an agent holds, as its view lists it: its `kind` and that kind's fields. */
export interface CapabilityView {
  kind: string;
  [field: string]: unknown;
}

/** Why an agent cannot run, with the fix (`cannot_run` of the agent view). */
export interface CannotRunView {
  kind: 'no-model' | 'missing-key';
  /** `provider/model` it would run on; null when it has none. */
  model: string | null;
  /** What is wrong, as a sentence without the agent's name. */
  reason: string;
  /** What to do about it. */
  fix: string;
}

/**
 * An agent as `GET /api/agents`, the CLI's `--json` and the dashboard show it. Field names are
 * snake_case like the manifest's; times are ISO 8601.
 */
export interface AgentView {
  id: string;
  name: string;
  version: string;
  description: string;
  state: AgentState;
  parent: string | null;
  children: string[];
  session_id: string;
  module: string;
  schedule: ScheduleMode;
  /** `provider/model` its `[model]` names; null when it uses the daemon's default model. */
  model: string | null;
  /** `provider/model` of its primary model: its own, else the daemon's default; null when neither. */
  runs_on: string | null;
  /** Why it cannot run, seen without the network (decision 0041); null when nothing local stands in its way. */
  cannot_run: CannotRunView | null;
  tags: string[];
  capabilities: CapabilityView[];
  created_at: string;
  updated_at: string;
}

/** An agent's skills as `GET /api/agents/{agent}` and `loom agent show` show them: each offered (in its prompt whole, or listed only), and the problems. */
export interface AgentSkillsView {
  /** In the prompt's order: the allowlist's (each after the skills it depends on), or by qualified name for all. */
  skills: { skill: string; name: string; description: string; in_prompt: boolean }[];
  /** Why a skill the allowlist names is not offered (not installed, ambiguous, unreadable), each naming it and the fix. */
  problems: string[];
  /** The budget the prompt was held to, in bytes. */
  budget_bytes: number;
}

/** The view of an agent with its full manifest (`GET /api/agents/{agent}`). */
export interface AgentDetailView extends AgentView {
  manifest: Record<string, unknown>;
  /** What its manifest's `skills` offer it of the installed skills; absent where the skills folder is not read. */
  skills?: AgentSkillsView | undefined;
}

/** A scheduled wake-up of an agent, run or skipped (`GET /api/agents/{agent}/schedule/runs`; times ISO 8601). */
export interface ScheduleRunView {
  id: string;
  /** `continuous`, `cron`, `manual` (forced now), or a proactive trigger's event. */
  trigger: string;
  due_at: string;
  started_at: string | null;
  finished_at: string | null;
  outcome: 'running' | 'completed' | 'unchanged' | 'failed' | 'skipped' | 'interrupted';
  /** Why it was skipped, interrupted or failed. */
  reason: string | null;
  /** Due while the daemon was down, and run late (`[schedule].catch_up`). */
  caught_up: boolean;
  /** How many due instants it stands for (more than 1 for missed ones skipped together). */
  count: number;
}

/** Usage of one agent with one model (`GET /api/usage`, `loom usage`). */
export interface UsageRow {
  agent_id: string;
  /** The agent's name, or null when it has been killed since. */
  agent: string | null;
  model: string;
  calls: number;
  /** Every input token, those read from or written to the prompt cache included. */
  input_tokens: number;
  output_tokens: number;
  /** Of `input_tokens`, those read from the provider's prompt cache. */
  cache_read_tokens: number;
  /** Of `input_tokens`, those written to the provider's prompt cache. */
  cache_write_tokens: number;
  cost_usd: number;
}

/** Today's spend as `GET /api/usage/today` answers it: the daemon's day, in its time zone. */
export interface UsageToday {
  /** The IANA time zone the day is counted in (`[scheduler].timezone`, UTC when unset). */
  timezone: string;
  /** The day's midnight and the next one there (epoch ms). */
  since: number;
  until: number;
  /** Input and output tokens, as `[resources].max_tokens_per_day` counts them. */
  tokens: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
}

/** One bucket of `GET /api/usage/series`: usage of one agent with one model from `start` for `step_ms`. */
export interface UsageBucketView extends UsageRow {
  start: number;
}

/** `GET /api/usage/series`: the buckets of a range on the daemon's clock. */
export interface UsageSeriesView {
  since: number;
  until: number;
  step_ms: number;
  buckets: UsageBucketView[];
}
