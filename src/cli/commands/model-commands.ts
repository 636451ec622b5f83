import { resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors/index.ts';
import { loadModelScript, startScriptedModelServer } from '../../models/scripted-model-server.ts';
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
    .requiredOption('--script <file>', 'a JSON script: an array of steps, or { "loop": true, "steps": [...] }')
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
    .action(async (flags: { script: string; port?: number; host: string; json?: boolean }) => {
      const script = await loadModelScript(resolve(io.cwd, flags.script));
      const server = await startScriptedModelServer({ steps: script.steps, loop: script.loop, host: flags.host, recordRequests: false, ...(flags.port === undefined ? {} : { port: flags.port }) });
      if (flags.json === true) io.stdout(`${JSON.stringify({ url: server.url, steps: script.steps.length, loop: script.loop })}\n`);
      else io.stdout(
        `Scripted model at ${server.url} (${script.steps.length} step${script.steps.length === 1 ? '' : 's'}${script.loop ? ', looping' : ''}).\n  OpenAI API:    POST ${server.url}/chat/completions\n  Anthropic API: POST ${server.url}/messages\nPoint [default_model] at it: provider = "openai-compatible", model = "scripted", base_url = "${server.url}". Press Ctrl-C to stop.\n`,
      );
      await (options.untilStopped ?? untilSignal)();
      await server.close();
    });
}

function untilSignal(): Promise<void> {
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
