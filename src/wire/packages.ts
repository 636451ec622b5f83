/** A package binding's trigger (spec/04). */
export type PackageTrigger =
  | { type: 'schedule'; cron: string }
  | { type: 'heartbeat'; interval: string; window?: string | undefined }
  | { type: 'event'; sources: string[] }
  | { type: 'manual' };

/** A binding as `/api/packages`, `loom package show --json` and the dashboard show it. */
export interface BindingView {
  name: string;
  description: string;
  trigger: PackageTrigger;
  /** When it fires next (ISO), for schedule and heartbeat triggers of an active package. */
  next_fire_at: string | null;
  /** The namespaced event it emits when a run ends without Abort. */
  emit: string | null;
  /** The namespaced events it runs on. */
  sources: string[];
  cost_estimate: string;
  total_per_run: number;
  running: boolean;
}

/** An installed package as `/api/packages` shows it. */
export interface PackageView {
  slug: string;
  qualified_name: string | null;
  version: string;
  /** Its agent's name (the slug) and id. */
  agent: string;
  agent_id: string;
  source: string;
  installed_at: string;
  /** Whether its triggers run (its agent runs and its configuration resolves). */
  active: boolean;
  settings: string[];
  /** Stored and shown only; Loom charges nothing. */
  pricing: { model?: string; cost?: number };
  skills: string[];
  bindings: BindingView[];
}

/** One activity of a package run. */
export interface ActivityRunView {
  id: string;
  status: string;
  attempts: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  output: string | null;
  error: string | null;
  /** The `on_error` fallback that applied when it failed (`NotifyOwner`, `Skip`, `Abort`). */
  fallback: string | null;
  started_at: string | null;
  ended_at: string | null;
}

/** The states of a package run; `skipped` and `missed` runs never started, and say why in `error`. */
export type PackageRunStatus = 'running' | 'completed' | 'aborted' | 'interrupted' | 'skipped' | 'missed' | 'unchanged';

/** A run of a binding, with each activity, as `/api/packages/runs` lists it (newest first). */
export interface PackageRunView {
  id: string;
  package: string;
  binding: string;
  trigger: string;
  status: PackageRunStatus | (string & {});
  inputs: Record<string, unknown>;
  emitted: string | null;
  /** Why it was aborted, skipped or missed. */
  error: string | null;
  started_at: string;
  ended_at: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  activities: ActivityRunView[];
}
