import { Command, CommanderError } from 'commander';
import { isLoomError, UsageError } from '../errors/index.ts';
import { type CliIo, EXIT, ExitStatus, processIo } from './cli-io.ts';
import { formatErrorForTerminal } from './wrap-error.ts';
import { registerA2aCommands } from './commands/a2a-commands.ts';
import { registerAgentCommands } from './commands/agent-commands.ts';
import { registerApprovalsCommands } from './commands/approvals-commands.ts';
import { registerDaemonCommands } from './commands/daemon-commands.ts';
import { registerDemoCommand } from './commands/demo-command.ts';
import { registerInitCommand } from './commands/init-command.ts';
import { registerManifestCommands } from './commands/manifest-commands.ts';
import { registerMcpCommand } from './commands/mcp-command.ts';
import { registerMcpLoginCommand } from './commands/mcp-login-command.ts';
import { registerMcpServersCommand } from './commands/mcp-servers-command.ts';
import { registerModelCommands } from './commands/model-commands.ts';
import { registerPackageCommands } from './commands/package-commands.ts';
import { registerToolsCommands } from './commands/tools-commands.ts';
import { registerSendCommands } from './commands/send-commands.ts';
import { registerStoreCommands } from './commands/store-commands.ts';
import { registerUsageCommand } from './commands/usage-command.ts';
import { registerChannelsCommand } from './commands/channels-command.ts';
import { LOOM_VERSION } from '../config/installation.ts';

export { EXIT } from './cli-io.ts';

/** The `loom` program with every command, writing to `io`; `main` parses argv with it (tests walk it). */
export function buildProgram(io: CliIo): Command {
  const program = new Command('loom')
    .description('Loom, an agent operating system: one daemon hosting many long-lived LLM agents.')
    .version(LOOM_VERSION, '-v, --version')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .option('--url <url>', 'the daemon to talk to, e.g. http://10.0.0.5:4200 (default LOOM_URL, else the one running for LOOM_HOME)', parseDaemonUrl)
    .addHelpText(
      'after',
      '\nEnvironment:\n  LOOM_HOME        the home folder (default ~/.loom)\n  LOOM_URL         the daemon to talk to (as --url)\n  LOOM_API_KEY     the key sent to the daemon\n  LOOM_LOG_LEVEL   debug | info | warn | error | silent (default warn for commands)\n  LOOM_LOG_FORMAT  auto | pretty | json: what the daemon prints (loom start --foreground)\n  LOOM_DEBUG=1     print stack traces with errors\n  LOOM_FROM_SOURCES=1  run the TypeScript sources even when the built daemon (dist/) is up to date\n\nExit status: 0 done, 1 anything else (a failure of Loom or a model provider), 2 bad input, 130 interrupted (Ctrl-C).\n\nExample:\n  $ loom init\n  $ loom agent spawn examples/agents/researcher.toml\n  $ loom agent list\n  $ loom --url http://10.0.0.5:4200 agent list\n',
    )
    // --url is LOOM_URL for this run: every command finds its daemon through the environment.
    .hook('preAction', (command) => {
      const url = command.opts<{ url?: string }>().url;
      if (url !== undefined) io.env = { ...io.env, LOOM_URL: url };
    });
  registerInitCommand(program, io);
  registerDaemonCommands(program, io);
  registerDemoCommand(program, io);
  registerManifestCommands(program, io);
  registerAgentCommands(program, io);
  registerSendCommands(program, io);
  registerUsageCommand(program, io);
  registerChannelsCommand(program, io);
  const mcp = registerMcpCommand(program, io);
  registerMcpServersCommand(mcp, io);
  registerMcpLoginCommand(mcp, io);
  registerA2aCommands(program, io);
  registerApprovalsCommands(program, io);
  registerPackageCommands(program, io);
  registerToolsCommands(program, io);
  registerModelCommands(program, io);
  registerStoreCommands(program, io);
  return program;
}

/** `--url`: an http(s) URL. */
function parseDaemonUrl(value: string): string {
  if (!/^https?:\/\/[^/\s]+/i.test(value.trim())) throw new UsageError(`--url: expected the daemon's http(s) URL, e.g. http://127.0.0.1:4200, got "${value}"`);
  return value.trim();
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof ExitStatus) return error.status;
  if (error instanceof CommanderError) {
    // Commander has already printed its message (or the help) through configureOutput.
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
    return EXIT.badInput;
  }
  const debug = io.env['LOOM_DEBUG'] === '1';
  const message = error instanceof Error ? error.message : String(error);
  // At a terminal a long refusal is wrapped to its width, its reason on the first line.
  io.stderr(io.columns === undefined || io.columns < 40 ? `error: ${message}\n` : formatErrorForTerminal(message, io.columns));
  if (debug && error instanceof Error && error.stack !== undefined) io.stderr(`${error.stack}\n`);
  if (isLoomError(error)) return error.category === 'user' ? EXIT.badInput : EXIT.failure;
  if (!debug) io.stderr('(set LOOM_DEBUG=1 for the stack trace)\n');
  return EXIT.failure;
}

/**
 * Runs the `loom` command line and returns the exit status. Never throws and never exits the
 * process, so it can be tested in-process.
 * @example process.exitCode = await main(process.argv.slice(2));
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    return report(error, io);
  }
}
