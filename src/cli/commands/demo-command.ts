import { join } from 'node:path';
import type { Command } from 'commander';
import { ConfigSchema, ensureLoomHome, resolveLoomHome } from '../../config/index.ts';
import { installedPath, LOOM_VERSION } from '../../config/installation.ts';
import { logAiSdkWarnings, readDaemonFile, type RunningDaemon, startDaemon } from '../../daemon/index.ts';
import { isLoomError, LoomError, UsageError } from '../../errors/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import { createLogger, LogRing } from '../../logging/index.ts';
import { loadManifestFile, type Manifest, ModelConfigSchema } from '../../manifest/index.ts';
import { loadModelScripts, type ScriptedModelServer, startScriptedModelServer } from '../../models/scripted-model-server.ts';
import { openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { DEFAULT_SERVE_PACE_MS, parsePace, untilSignal } from './model-commands.ts';

/**
 * The example agents `loom demo` spawns, each playing its own script (`examples/models/<name>.json`),
 * with what to say to it and what it shows. The others need a real model: researcher, coordinator
 * and helper pin a provider (a key); toolsmith's forged tools are judged by a model; front-desk and
 * project-lead hand work to other agents in an order one script per agent cannot follow.
 */
export const DEMO_AGENTS: readonly { name: string; file: string; say: string; shows: string }[] = [
  { name: 'hello', file: 'hello.toml', say: 'Who is here?', shows: 'calls agent_list, then answers' },
  { name: 'assistant', file: 'assistant.json', say: 'Remember that I said hello', shows: 'keeps a note with memory_store' },
  { name: 'careful-writer', file: 'careful-writer.toml', say: 'Write a haiku to haiku.txt', shows: 'asks for your approval before it writes the file' },
  { name: 'log-analyst', file: 'log-analyst.toml', say: 'Any errors lately?', shows: "reads the daemon's log with get_recent_logs" },
  { name: 'deep-thinker', file: 'deep-thinker.toml', say: 'Why do leaves turn red?', shows: 'assesses, plans two steps, runs them, combines them' },
  { name: 'morning-report', file: 'morning-report.toml', say: 'Report now', shows: 'lists its workspace (it also wakes by itself on weekdays at 09:00)' },
];

/** The script every other agent plays (an agent spawned during the demo without a [model]). */
const DEMO_DEFAULT_SCRIPT = 'hello';

/** The demo's home: its own folder beside the person's, so their agents and config are never touched. */
function demoHomeRoot(root: string): string {
  return join(root, 'demo');
}

/** `manifest` on the scripted model `name` at `url`, its other model settings (system prompt, max tokens) kept. */
function onScript(manifest: Manifest, name: string, url: string): Manifest {
  return {
    ...manifest,
    model: ModelConfigSchema.parse({ ...manifest.model, provider: 'openai-compatible', model: name, base_url: url, api_key_env: undefined }),
  };
}

/** Spawns each demo agent on its script, or points one left from an earlier demo at this run's server. */
async function spawnDemoAgents(kernel: Kernel, url: string): Promise<void> {
  const examples = installedPath('examples', 'agents');
  const present = new Set(kernel.list().map((agent) => agent.name));
  for (const agent of DEMO_AGENTS) {
    const { manifest } = await loadManifestFile(join(examples, agent.file));
    const scripted = onScript(manifest, agent.name, url);
    if (present.has(agent.name)) await kernel.update(agent.name, scripted);
    else await kernel.spawn(scripted);
  }
}

/** What the demo prints once it runs: where, what to try, and that the model is scripted. */
export function demoText(url: string, home: string, paceMs: number): string {
  const width = Math.max(...DEMO_AGENTS.map((agent) => agent.name.length));
  const cli = `npx loom --url ${url}`;
  return [
    `Loom demo: the daemon is at ${url} (home ${home}).`,
    '',
    `The model is scripted: no key, no network. Each agent replays its script in examples/models/<agent>.json, streamed word by word (${paceMs} ms a word; --pace changes it). The replies are canned, not thought: the tools they call and the approvals they ask for are real.`,
    '',
    `Open the dashboard: ${url}/#/agents/hello/chat`,
    'Or, in another terminal:',
    `  ${cli} chat hello`,
    `  ${cli} send careful-writer "Write a haiku to haiku.txt" --stream`,
    `  ${cli} approvals list`,
    '',
    'The agents, what to say and what they do:',
    ...DEMO_AGENTS.map((agent) => `  ${agent.name.padEnd(width)}  "${agent.say}": ${agent.shows}`),
    '',
    'For a real model: set ANTHROPIC_API_KEY (or OPENAI_API_KEY) and run `npx loom init`, or start Ollama',
    '(ollama serve; ollama pull llama3.2) and run `npx loom init`; then `npm start` and spawn the examples.',
    'Press Ctrl-C to stop the demo.',
    '',
  ].join('\n');
}

/** `loom demo`: the daemon on a scripted model, the example agents spawned, in one command and no key. */
export function registerDemoCommand(program: Command, io: CliIo, options: { untilStopped?: () => Promise<void> } = {}): void {
  program
    .command('demo')
    .description('try Loom without a key: the daemon with a scripted model, the example agents spawned, until Ctrl-C')
    .option('--port <port>', 'the port of the daemon (default: [daemon].port, 4200; 0 picks a free one)', parseDemoPort)
    .option('--pace <ms>', `how long the scripted model waits before each streamed word, in milliseconds (default ${DEFAULT_SERVE_PACE_MS})`, parsePace)
    .addHelpText(
      'after',
      '\nThe demo has a home of its own (demo/ in LOOM_HOME, default ~/.loom/demo): your agents and config.toml are not touched.\nIts agents play the scripts in examples/models/; see docs/scripted-model.md.\n\nExample:\n  $ loom demo\n  $ loom --url http://127.0.0.1:4200 chat hello\n',
    )
    .action(async (flags: { port?: number; pace?: number }) => {
      const { home: own } = await openHome(io);
      const home = resolveLoomHome({ LOOM_HOME: demoHomeRoot(own.root) }, io.cwd);
      await ensureLoomHome(home);
      const paceMs = flags.pace ?? DEFAULT_SERVE_PACE_MS;
      const scripts = await loadModelScripts(installedPath('examples', 'models'));
      let model: ScriptedModelServer | undefined;
      let daemon: RunningDaemon | undefined;
      let restoreWarnings = (): void => undefined;
      try {
        model = await startScriptedModelServer({ scripts, paceMs, recordRequests: false });
        const config = ConfigSchema.parse({ default_model: { provider: 'openai-compatible', model: DEMO_DEFAULT_SCRIPT, base_url: model.url } });
        const logs = new LogRing();
        const logger = createLogger({ level: 'warn', ring: logs, file: join(home.logsDir, 'daemon.log'), format: 'pretty', colorize: io.interactive === true });
        restoreWarnings = logAiSdkWarnings(logger);
        daemon = await startDaemon({
          home,
          config,
          env: io.env,
          logger,
          logs,
          version: LOOM_VERSION,
          ...(flags.port === undefined ? {} : { port: flags.port }),
        }).catch(async (error: unknown) => {
          // The demo's own home: another demo holds it (its daemon file names it).
          const running = isLoomError(error) && error.code === 'DAEMON_RUNNING' ? await readDaemonFile(home) : undefined;
          if (running === undefined) throw error;
          throw new LoomError(
            'DAEMON_RUNNING',
            'user',
            `cannot start the demo: another demo runs at ${running.url} (pid ${running.pid}); use that one (its dashboard: ${running.url}/#/agents/hello/chat), or stop it with Ctrl-C in its terminal`,
            { cause: error },
          );
        });
        await spawnDemoAgents(daemon.host.kernel, model.url);
        io.stdout(demoText(daemon.info.url, home.root, paceMs));
        await (options.untilStopped ?? untilSignal)();
        io.stdout('Stopping the demo…\n');
      } finally {
        await daemon?.stop();
        await model?.close();
        restoreWarnings();
      }
    });
}

function parseDemoPort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`--port: expected a port number from 0 to 65535, got "${value}"`);
  return port;
}
