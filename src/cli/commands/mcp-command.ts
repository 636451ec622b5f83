import { Writable } from 'node:stream';
import type { Command } from 'commander';
import { LOCAL_PRINCIPAL_NAME, type Principal } from '../../access/index.ts';
import type { AgentDirectory } from '../../mcp/server/index.ts';
import { findDaemonUrl } from '../backend.ts';
import { openCliContext, openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { LOOM_VERSION } from '../../config/installation.ts';

/** The principal of the local user running `loom mcp` without a daemon: the owner, as at the CLI. */
const LOCAL_PRINCIPAL: Principal = { name: LOCAL_PRINCIPAL_NAME, role: 'owner', agents: ['*'] };

/** Standard output as a stream: only MCP messages go there. */
function stdoutStream(io: CliIo): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      io.stdout(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      callback();
    },
  });
}

/**
 * `loom mcp`: an MCP server on stdio serving each agent as a tool `loom_agent_{name}`. With a
 * daemon running it proxies to it over HTTP (with `LOOM_API_KEY` as the key); otherwise it boots
 * a kernel in this process. Returns the `mcp` command, so subcommands can be added to it.
 */
export function registerMcpCommand(program: Command, io: CliIo): Command {
  return program
    .command('mcp')
    .description(
      "serve Loom's agents over MCP on stdio (for Claude Desktop, Cursor, VS Code…): each agent is a tool loom_agent_<name> and two resources, loom://agents/<name>/session and …/turns/last",
    )
    .addHelpText(
      'after',
      '\nStandard output carries only MCP messages; logs go to standard error. With a daemon running (or named\nby --url or LOOM_URL) the calls go to it (set LOOM_API_KEY when it requires a key); otherwise agents run in this process.\n\nExample:\n  $ loom mcp\n  $ loom --url http://10.0.0.5:4200 mcp\n\nIn an IDE\'s mcpServers config:\n  { "mcpServers": { "loom": { "command": "loom", "args": ["mcp"] } } }\n',
    )
    .action(async () => {
      // Loaded here, not at the top: every command module loads with `loom start`, which needs no MCP server SDK.
      const { daemonAgentDirectory, kernelAgentDirectory, mcpPrincipal, serveMcpStdio } = await import('../../mcp/server/index.ts');
      const { home } = await openHome(io);
      const daemonUrl = await findDaemonUrl(home, io.env);
      let directory: AgentDirectory;
      let release: () => Promise<void>;
      if (daemonUrl !== undefined) {
        directory = daemonAgentDirectory({ url: daemonUrl, apiKey: io.env['LOOM_API_KEY'] });
        release = () => Promise.resolve();
      } else {
        const context = await openCliContext(io);
        directory = kernelAgentDirectory(context.kernel, mcpPrincipal(context.config));
        release = () => context.close();
      }
      const server = serveMcpStdio({
        directory,
        principal: LOCAL_PRINCIPAL,
        version: LOOM_VERSION,
        stdin: io.stdin,
        stdout: stdoutStream(io),
        onerror: (error) => {
          if (io.env['LOOM_DEBUG'] === '1') io.stderr(`loom mcp: ${error.message}\n`);
        },
      });
      try {
        await server.closed;
      } finally {
        await release();
      }
    });
}
