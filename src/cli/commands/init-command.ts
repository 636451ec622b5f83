import { appendFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { stringify } from 'smol-toml';
import { ensureLoomHome, loadConfig, resolveLoomHome } from '../../config/index.ts';
import { readDaemonFile, staleDaemon } from '../../daemon/index.ts';
import { UsageError } from '../../errors/index.ts';
import { MODEL_PROVIDERS } from '../../manifest/index.ts';
import { modelName, type ModelTarget } from '../../models/index.ts';
import type { CliIo } from '../cli-io.ts';

/** Where a local Ollama answers, for `loom init`'s look around. */
const OLLAMA_URL = 'http://127.0.0.1:11434';

/** The model each provider key stands for when `loom init` finds it. */
const BY_KEY: readonly { env: string; model: ModelTarget }[] = [
  { env: 'ANTHROPIC_API_KEY', model: { provider: 'anthropic', model: 'claude-haiku-4-5' } },
  { env: 'OPENAI_API_KEY', model: { provider: 'openai', model: 'gpt-4o-mini' } },
  { env: 'GROQ_API_KEY', model: { provider: 'groq', model: 'llama-3.3-70b-versatile' } },
  { env: 'OPENROUTER_API_KEY', model: { provider: 'openrouter', model: 'anthropic/claude-haiku-4.5' } },
];

/** The first model a local Ollama has, if it answers within half a second. */
async function findOllama(): Promise<ModelTarget | undefined> {
  try {
    const response = await fetch(`${OLLAMA_URL}/api/tags`, { signal: AbortSignal.timeout(500) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { models?: { name?: string }[] };
    const name = body.models?.[0]?.name;
    return { provider: 'ollama', model: name ?? 'llama3.2', base_url: `${OLLAMA_URL}/v1` };
  } catch {
    return undefined;
  }
}

/** `--default-model provider/model` (and `--base-url`) as a model target. */
function parseDefaultModel(text: string, baseUrl: string | undefined): ModelTarget {
  const slash = text.indexOf('/');
  const provider = text.slice(0, slash);
  if (slash <= 0 || slash === text.length - 1 || !(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    throw new UsageError(
      `--default-model: expected provider/model with provider one of ${MODEL_PROVIDERS.join(', ')}, e.g. anthropic/claude-haiku-4-5, got "${text}"`,
    );
  }
  if (provider === 'openai-compatible' && baseUrl === undefined)
    throw new UsageError("--default-model openai-compatible/… needs --base-url, the server's URL (e.g. http://127.0.0.1:4300/v1)");
  return { provider: provider as ModelTarget['provider'], model: text.slice(slash + 1), ...(baseUrl === undefined ? {} : { base_url: baseUrl }) };
}

/** `loom init`: create the home folder with a commented config, and a default model when one is found or named. */
export function registerInitCommand(program: Command, io: CliIo): void {
  program
    .command('init')
    .description('create the Loom home folder (LOOM_HOME, default ~/.loom) with a commented config.toml and a default model')
    .option('--default-model <provider/model>', 'the model of agents without [model] (default: found from your keys or a local Ollama)')
    .option('--base-url <url>', 'the base URL of that model (needed for openai-compatible servers, e.g. loom model serve)')
    .addHelpText(
      'after',
      '\nAn existing config.toml is never overwritten; a [default_model] is added to it only when it has none.\nWithout --default-model, init looks for ANTHROPIC_API_KEY, OPENAI_API_KEY, GROQ_API_KEY, OPENROUTER_API_KEY,\nthen a local Ollama, and uses the first it finds.\n\nExample:\n  $ loom init\n  $ loom init --default-model openai-compatible/scripted --base-url http://127.0.0.1:4300/v1\n',
    )
    .option('--json', 'print { home, config, config_written, database, default_model, default_model_source }')
    .action(async (options: { defaultModel?: string; baseUrl?: string; json?: boolean }) => {
      const home = resolveLoomHome(io.env, io.cwd);
      const { configWritten } = await ensureLoomHome(home);
      const json = options.json === true;
      const say = (text: string): void => {
        if (!json) io.stdout(text);
      };
      const done = (model: ModelTarget | undefined, source: string | null): void => {
        if (json)
          io.stdout(
            `${JSON.stringify({ home: home.root, config: home.configPath, config_written: configWritten, database: home.databasePath, default_model: model ?? null, default_model_source: source }, null, 2)}\n`,
          );
      };
      say(`Loom home: ${home.root}\n  config:   ${home.configPath}${configWritten ? '' : ' (already there)'}\n  database: ${home.databasePath}\n`);
      // A daemon reads config.toml when it starts, but follows [default_model] as it runs: the
      // model init just wrote (`written`) takes effect at once; other changes since it started
      // take a restart.
      const sayIfDaemonIsStale = async (written?: ModelTarget): Promise<void> => {
        const daemon = written === undefined ? await staleDaemon(home) : await readDaemonFile(home);
        if (daemon === undefined) return;
        const notice =
          written === undefined
            ? `The Loom daemon at ${daemon.url} (pid ${daemon.pid}) started before config.toml last changed: restart it to use what changed (loom stop, then loom start or npm start).\n`
            : `The Loom daemon at ${daemon.url} (pid ${daemon.pid}) takes ${modelName(written)} as its default model now: it follows [default_model] in config.toml, no restart needed.\n`;
        // Standard output holds the JSON alone.
        if (json) io.stderr(notice);
        else io.stdout(notice);
      };
      const config = await loadConfig(home);
      if (config.default_model !== undefined) {
        if (options.defaultModel !== undefined)
          throw new UsageError(
            `config.toml already names a default model (${modelName(config.default_model)}); edit [default_model] in ${home.configPath} to change it`,
          );
        say(`Default model: ${modelName(config.default_model)}\n`);
        done(config.default_model, 'config.toml');
        await sayIfDaemonIsStale();
        return;
      }
      let chosen: { model: ModelTarget; why: string } | undefined;
      if (options.defaultModel !== undefined) chosen = { model: parseDefaultModel(options.defaultModel, options.baseUrl), why: 'as asked' };
      else {
        const key = BY_KEY.find((candidate) => (io.env[candidate.env] ?? '').trim() !== '');
        if (key !== undefined) chosen = { model: key.model, why: `found ${key.env}` };
        else {
          const ollama = await findOllama();
          if (ollama !== undefined) chosen = { model: ollama, why: `found Ollama at ${OLLAMA_URL}` };
        }
      }
      if (chosen === undefined) {
        done(undefined, null);
        say(
          'No model found (no ANTHROPIC_API_KEY, OPENAI_API_KEY, GROQ_API_KEY or OPENROUTER_API_KEY, no Ollama at 127.0.0.1:11434).\nTo try Loom without one, serve a scripted model in another terminal and make it the default:\n  $ npx loom model serve --script examples/models/hello.json --port 4300\n  $ npx loom init --default-model openai-compatible/scripted --base-url http://127.0.0.1:4300/v1\n',
        );
        return;
      }
      await appendFile(
        home.configPath,
        `\n# Set by loom init (${chosen.why}): the model of agents whose manifest has no [model].\n${stringify({ default_model: chosen.model })}\n`,
      );
      say(`Default model: ${modelName(chosen.model)} (${chosen.why})\n`);
      done(chosen.model, chosen.why);
      await sayIfDaemonIsStale(chosen.model);
    });
}
