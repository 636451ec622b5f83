import { type ModelConfig, namedModel } from '../manifest/index.ts';
import { modelName } from './model-name.ts';
import type { ModelFetch, ModelTarget } from './resolve-model.ts';
import { DEFAULT_API_KEY_ENV, modelEndpoint } from './resolve-model.ts';

/** How long {@link checkAgentModels} waits for a model server to answer before calling it unreachable. */
const DEFAULT_REACHABILITY_TIMEOUT_MS = 1_500;

/** How long a spawn or an update waits for the agent's model server before warning it does not answer (see {@link modelWarnings}). */
const SPAWN_PROBE_TIMEOUT_MS = 1_000;

/** Why an agent's model cannot be called, with the fix. */
export interface ModelProblem {
  /** Where the model is named: `[model]`, `[[fallback_models]][0]`, `[default_model] (config.toml)`. */
  field: string;
  /** `provider/model`, or null when there is no model at all. */
  model: string | null;
  kind: 'no-model' | 'missing-key' | 'unreachable';
  /** What is wrong, as a sentence without the agent's name: `model "anthropic/…" needs ANTHROPIC_API_KEY, which is not set`. */
  problem: string;
  /** What to do about it. */
  fix: string;
}

/** The parts of a manifest that say which models an agent calls. */
interface ModelsOfManifest {
  module: string;
  /** `[model]`; without provider and model it names none (the default model, with its settings). */
  model?: ModelConfig | undefined;
  fallback_models: readonly ModelTarget[];
}

/** Where the models of a manifest are written, and which they are. */
interface NamedTarget {
  field: string;
  target: ModelTarget;
  /** The config section to fix, for the default model. */
  fromConfig: boolean;
}

/** What {@link checkModelKeys} reads: the daemon's default model and environment. */
export interface ModelReadinessOptions {
  /** `[default_model]` of config.toml: the model of an agent without `[model]`. */
  defaultModel?: ModelTarget | undefined;
  /** The environment the daemon reads keys from (the daemon's, not the caller's). */
  env: Readonly<Record<string, string | undefined>>;
}

function targetsOf(manifest: ModelsOfManifest, defaultModel: ModelTarget | undefined): NamedTarget[] {
  const targets: NamedTarget[] = [];
  const named = namedModel(manifest.model);
  if (named !== undefined) targets.push({ field: '[model]', target: named, fromConfig: false });
  else if (defaultModel !== undefined) targets.push({ field: '[default_model] (config.toml)', target: defaultModel, fromConfig: true });
  manifest.fallback_models.forEach((target, index) => targets.push({ field: `[[fallback_models]][${index}]`, target, fromConfig: false }));
  return targets;
}

/** Whether the module calls models at all (code agents run their own program). */
function callsModels(module: string): boolean {
  return module.startsWith('builtin:');
}

/**
 * What keeps an agent's models from being called that can be seen without the network: no model
 * at all (no `[model]` and no `[default_model]`), or a key variable that is not set.
 * @example checkModelKeys(manifest, { defaultModel: config.default_model, env: process.env })
 */
function checkModelKeys(manifest: ModelsOfManifest, options: ModelReadinessOptions): ModelProblem[] {
  if (!callsModels(manifest.module)) return [];
  const targets = targetsOf(manifest, options.defaultModel);
  const problems: ModelProblem[] = [];
  if (namedModel(manifest.model) === undefined && options.defaultModel === undefined) {
    problems.push({
      field: '[model]',
      model: null,
      kind: 'no-model',
      problem: `it has ${manifest.model === undefined ? 'no [model]' : 'a [model] that names no provider and model'} and config.toml has no [default_model]`,
      fix: 'run `loom init` (it picks a default model from your keys or a local Ollama), or add [default_model] to config.toml, or [model] to the manifest',
    });
  }
  for (const { field, target, fromConfig } of targets) {
    const { keyVariable } = modelEndpoint(target);
    // A keyless provider (Ollama, an OpenAI-compatible server) runs without its key variable.
    if (keyVariable === null || DEFAULT_API_KEY_ENV[target.provider] === null) continue;
    if ((options.env[keyVariable] ?? '').trim() !== '') continue;
    problems.push({
      field,
      model: modelName(target),
      kind: 'missing-key',
      problem: `model "${modelName(target)}" (${field}) needs ${keyVariable}, which is not set`,
      fix: `set ${keyVariable} in the daemon's environment and restart it${target.api_key_env === undefined ? `, or name the variable that holds the key in ${fromConfig ? '[default_model]' : field}.api_key_env` : ''}`,
    });
  }
  return problems;
}

/**
 * What keeps an agent without `[model]` from running that can be seen without the network: no
 * `[default_model]`, or the key variable it needs not set (none for a keyless provider: Ollama, an
 * OpenAI-compatible server). Empty when the default model can be called.
 * @example checkDefaultModel({ defaultModel: config.default_model, env: process.env })
 */
export function checkDefaultModel(options: ModelReadinessOptions): ModelProblem[] {
  return checkModelKeys({ module: 'builtin:assistant', fallback_models: [] }, options);
}

/**
 * Why an agent cannot run on the model it runs on (its `[model]`, else `[default_model]`), from
 * local facts only, cheap enough for every list: it has no model at all, or the key variable of
 * that model is not set. Fallback models are not looked at (see {@link checkModelKeys} for all of
 * them), nor whether a model server answers (see {@link checkAgentModels}). Undefined when it can
 * run as far as can be told without the network. `env` undefined: only the no-model case is seen.
 * @example checkPrimaryModel(manifest, { defaultModel: config.default_model, env: process.env })
 */
export function checkPrimaryModel(
  manifest: ModelsOfManifest,
  options: { defaultModel?: ModelTarget | undefined; env?: Readonly<Record<string, string | undefined>> | undefined },
): ModelProblem | undefined {
  const { env } = options;
  const problems = checkModelKeys({ ...manifest, fallback_models: [] }, { defaultModel: options.defaultModel, env: env ?? {} });
  return problems.find((problem) => problem.kind === 'no-model' || env !== undefined);
}

/** Whether something answers HTTP at `baseUrl` (any status counts: it is there). */
async function answers(baseUrl: string, fetch: ModelFetch, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/models`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** Options of {@link checkAgentModels}. */
export interface ModelCheckOptions extends ModelReadinessOptions {
  fetch?: ModelFetch;
  /** How long a model server has to answer (default 1.5 s). */
  timeoutMs?: number;
  /**
   * Whether each server answered, by base URL: shared across the checks of several agents (one
   * `loom doctor`), so each server is asked once in all. Each check asks its own by default.
   */
  probes?: Map<string, Promise<boolean>>;
}

/**
 * Everything {@link checkModelKeys} finds, and model servers that do not answer: Ollama, an
 * OpenAI-compatible server, or any `base_url` given (hosted providers at their own addresses
 * are not probed). Each server is asked once, however many models name it.
 * @example const problems = await checkAgentModels(manifest, { defaultModel, env, fetch });
 */
export async function checkAgentModels(manifest: ModelsOfManifest, options: ModelCheckOptions): Promise<ModelProblem[]> {
  const problems = checkModelKeys(manifest, options);
  if (!callsModels(manifest.module)) return problems;
  const fetch = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_REACHABILITY_TIMEOUT_MS;
  const probes = options.probes ?? new Map<string, Promise<boolean>>();
  for (const { field, target, fromConfig } of targetsOf(manifest, options.defaultModel)) {
    const local = target.provider === 'ollama' || target.provider === 'openai-compatible';
    if (!local && target.base_url === undefined) continue;
    const { baseUrl } = modelEndpoint(target);
    if (baseUrl === '') continue;
    let probe = probes.get(baseUrl);
    if (probe === undefined) {
      probe = answers(baseUrl, fetch, timeoutMs);
      probes.set(baseUrl, probe);
    }
    if (await probe) continue;
    const where = fromConfig ? '[default_model].base_url' : `${field}.base_url`;
    problems.push({
      field,
      model: modelName(target),
      kind: 'unreachable',
      problem: `model "${modelName(target)}" (${field}): nothing answers at ${baseUrl}`,
      fix:
        target.provider === 'ollama' && target.base_url === undefined
          ? `start Ollama (ollama serve) and pull the model (ollama pull ${target.model}), or set ${where} to where it runs`
          : `start the model server at ${baseUrl}, or set ${where} to where it runs`,
    });
  }
  return problems;
}

/** A problem as one warning line about the agent `name`, with its fix. */
function formatModelProblem(name: string, problem: ModelProblem): string {
  return `agent "${name}" cannot run: ${problem.problem}; ${problem.fix}`;
}

/**
 * What a spawn or an update warns about the agent `name` with `manifest`: each reason it could
 * not run (see {@link checkAgentModels}) as one line with its fix. A model server has 1 s to
 * answer unless `options.timeoutMs` says otherwise.
 * @example await modelWarnings('helper', manifest, { defaultModel: config.default_model, env })
 * // ['agent "helper" cannot run: model "anthropic/claude-…" ([model]) needs ANTHROPIC_API_KEY, which is not set; set …']
 */
export async function modelWarnings(name: string, manifest: ModelsOfManifest, options: ModelCheckOptions): Promise<string[]> {
  const problems = await checkAgentModels(manifest, { ...options, timeoutMs: options.timeoutMs ?? SPAWN_PROBE_TIMEOUT_MS });
  return problems.map((problem) => formatModelProblem(name, problem));
}
