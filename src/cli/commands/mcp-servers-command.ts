import type { Command } from 'commander';
import { mcpServersView } from '../../http/index.ts';
import { getFromDaemon } from '../backend.ts';
import { openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTable } from '../format.ts';

interface ServersView {
  configured: { name: string; transport: string; status: string; error?: string; tools: { name: string }[] }[];
}

/** `loom mcp servers`: the configured MCP servers, their state and tools (as the daemon sees them). */
export function registerMcpServersCommand(mcp: Command, io: CliIo): void {
  mcp
    .command('servers')
    .description('list the configured MCP servers ([[mcp_servers]]): transport, state, tools (connected by the daemon)')
    .option('--json', 'print the object of GET /api/mcp/servers')
    .addHelpText('after', '\nExample:\n  $ loom mcp servers --json\n')
    .action(async (options: { json?: boolean }) => {
      const { home, config } = await openHome(io);
      // Without a daemon nothing is connected: show the configuration.
      const view: ServersView = (await getFromDaemon<ServersView>(home, io.env, '/api/mcp/servers')) ?? mcpServersView(config, undefined);
      if (options.json === true) {
        io.stdout(`${JSON.stringify(view, null, 2)}\n`);
        return;
      }
      if (view.configured.length === 0) {
        io.stdout('No MCP servers configured. Add [[mcp_servers]] to config.toml (see the README).\n');
        return;
      }
      io.stdout(
        formatTable(
          ['NAME', 'TRANSPORT', 'STATE', 'TOOLS'],
          view.configured.map((server) => [server.name, server.transport, server.error === undefined ? server.status : `${server.status}: ${server.error}`, server.tools.map((tool) => tool.name).join(', ') || '-']),
        ),
      );
    });
}
