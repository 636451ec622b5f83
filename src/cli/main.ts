import { Command, CommanderError } from 'commander';
import { isLoomError } from '../errors/index.ts';
import { type CliIo, EXIT, ExitStatus, processIo } from './cli-io.ts';
import { registerA2aCommands } from './commands/a2a-commands.ts';
import { registerAgentCommands } from './commands/agent-commands.ts';
import { registerApprovalsCommands } from './commands/approvals-commands.ts';
import { registerDaemonCommands } from './commands/daemon-commands.ts';
import { registerInitCommand } from './commands/init-command.ts';
import { registerManifestCommands } from './commands/manifest-commands.ts';
import { registerMcpCommand } from './commands/mcp-command.ts';
import { registerMcpServersCommand } from './commands/mcp-servers-command.ts';
import { registerModelCommands } from './commands/model-commands.ts';
import { registerPackageCommands } from './commands/package-commands.ts';
import { registerToolsCommands } from './commands/tools-commands.ts';
import { registerSendCommands } from './commands/send-commands.ts';
import { registerUsageCommand } from './commands/usage-command.ts';
import { registerChannelsCommand } from './commands/channels-command.ts';
import { LOOM_VERSION } from './version.ts';

export { EXIT } from './cli-io.ts';

function buildProgram(io: CliIo): Command {
  const program = new Command('loom')
    .description('Loom, an agent operating system: one daemon hosting many long-lived LLM agents.')
    .version(LOOM_VERSION, '-v, --version')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .addHelpText(
      'after',
      '\nEnvironment:\n  LOOM_HOME       the home folder (default ~/.loom)\n  LOOM_LOG_LEVEL  debug | info | warn | error | silent (default warn for commands)\n  LOOM_DEBUG=1    print stack traces with errors\n\nExample:\n  $ loom init\n  $ loom agent spawn examples/agents/researcher.toml\n  $ loom agent list\n',
    );
  registerInitCommand(program, io);
  registerDaemonCommands(program, io);
  registerManifestCommands(program, io);
  registerAgentCommands(program, io);
  registerSendCommands(program, io);
  registerUsageCommand(program, io);
  registerChannelsCommand(program, io);
  registerMcpServersCommand(registerMcpCommand(program, io), io);
  registerA2aCommands(program, io);
  registerApprovalsCommands(program, io);
  registerPackageCommands(program, io);
  registerToolsCommands(program, io);
  registerModelCommands(program, io);
  return program;
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
  io.stderr(`error: ${message}\n`);
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
