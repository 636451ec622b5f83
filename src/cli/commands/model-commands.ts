import { resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors/index.ts';
import { loadModelScript, loadModelScripts, type ModelScript, startScriptedModelServer } from '../../models/scripted-model-server.ts';
import type { CliIo } from '../cli-io.ts';

/** `loom model serve`: a scripted model server, for trying Loom without a key and for offline tests. */
export function registerModelCommands(program: Command, io: CliIo, options: { untilStopped?: () => Promise<void> } = {}): void {
  const model = program
    .command('model')
    .description('model tools: a scripted model server for trying Loom without a provider, and for offline tests of your agents')
    .addHelpText('after', '\nExample:\n  $ loom model serve --script examples/models/hello.json --port 4300\n');
  model
    .command('serve')
    .description('serve a scripted model over the OpenAI and Anthropic HTTP APIs until stopped (Ctrl-C)')
    .option('--script <file>', 'a JSON script: an array of steps, or { "loop": true, "pace_ms": 30, "steps": [...] }')
    .option('--scripts <dir>', 'serve every *.json script in a folder, each under its file name as the model name (examples/models)')
    .option(
      '--pace <ms>',
      `how long a streamed reply waits before each word, in milliseconds (default ${DEFAULT_SERVE_PACE_MS}; 0 sends it at once)`,
      parsePace,
    )
    .option('--port <port>', 'the port (default: a free one)', (value) => {
      const port = Number(value);
      if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`--port: expected a port number from 0 to 65535, got "${value}"`);
      return port;
    })
    .option('--host <host>', 'where to listen', '127.0.0.1')
    .option('--json', 'print { url, steps, loop } on one line once it listens (for scripts that start it)')
    .addHelpText(
      'after',
      '\nEach request gets the next step: a reply ({ "text": "…", "toolCalls": [{ "name": "agent_list", "input": {} }], "usage": {…} })\nor an HTTP error ({ "status": 429 }). Point an agent (or [default_model]) at it with provider = "openai-compatible"\nand base_url = the URL printed. See docs/scripted-model.md.\n\nExample:\n  $ loom model serve --script examples/models/hello.json --port 4300\n',
    )
    .action(async (flags: { script?: string; scripts?: string; pace?: number; port?: number; host: string; json?: boolean }) => {
      if (flags.script === undefined && flags.scripts === undefined)
        throw new UsageError('loom model serve: give the script to play with --script <file>, or a folder of scripts with --scripts <dir>');
      const script: ModelScript | undefined = flags.script === undefined ? undefined : await loadModelScript(resolve(io.cwd, flags.script));
      const loaded = flags.scripts === undefined ? {} : await loadModelScripts(resolve(io.cwd, flags.scripts));
      // --pace, when given, holds for every script; else each script's own pace_ms, else the default.
      const scripts = Object.fromEntries(Object.entries(loaded).map(([name, one]) => [name, flags.pace === undefined ? one : { ...one, paceMs: flags.pace }]));
      const server = await startScriptedModelServer({
        steps: script?.steps ?? [],
        loop: script?.loop ?? false,
        scripts,
        paceMs: flags.pace ?? script?.paceMs ?? DEFAULT_SERVE_PACE_MS,
        host: flags.host,
        recordRequests: false,
        ...(flags.port === undefined ? {} : { port: flags.port }),
      });
      const models = Object.keys(scripts);
      if (flags.json === true) io.stdout(`${JSON.stringify({ url: server.url, steps: script?.steps.length ?? 0, loop: script?.loop ?? false, models })}\n`);
      else {
        const main =
          script === undefined ? 'no default script' : `${script.steps.length} step${script.steps.length === 1 ? '' : 's'}${script.loop ? ', looping' : ''}`;
        io.stdout(
          `Scripted model at ${server.url} (${main}).\n  OpenAI API:    POST ${server.url}/chat/completions\n  Anthropic API: POST ${server.url}/messages\n` +
            (models.length === 0 ? '' : `  Models with a script of their own: ${models.join(', ')} (model = "<name>" plays <name>.json)\n`) +
            `Point [default_model] at it: provider = "openai-compatible", model = "scripted", base_url = "${server.url}". Press Ctrl-C to stop.\n`,
        );
      }
      await (options.untilStopped ?? untilSignal)();
      await server.close();
    });
}

/** How long `loom model serve` waits before each streamed word unless told: enough to watch the reply arrive. */
export const DEFAULT_SERVE_PACE_MS = 30;

/** `--pace`: whole milliseconds from 0 to 10,000. @throws {UsageError} naming the option and the value. */
export function parsePace(value: string): number {
  const pace = Number(value);
  if (!Number.isInteger(pace) || pace < 0 || pace > 10_000) throw new UsageError(`--pace: expected milliseconds from 0 to 10000, got "${value}"`);
  return pace;
}

/** Resolves at the first SIGINT or SIGTERM (a foreground command's end), removing its listeners. */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
