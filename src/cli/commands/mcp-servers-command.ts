import type { Command } from 'commander';
import { type McpServerView, mcpServersView } from '../../http/index.ts';
import { callDaemon } from '../backend.ts';
import { API } from '../../wire/index.ts';
import { openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTable } from '../format.ts';

/** `GET /api/mcp/servers`' answer, with the MCP client's own types. */
interface ServersView {
  configured: McpServerView[];
  connected: McpServerView[];
  total_configured: number;
  total_connected: number;
}

/** The PROTOCOL column: the revision negotiated and its era, `-` before any connection. */
function protocolOf(server: McpServerView): string {
  const era = server.era === undefined ? undefined : server.era === 'modern' ? '2026 era' : '2025 era';
  if (server.protocol_version === undefined) return era === undefined ? '-' : `(${era})`;
  return `${server.protocol_version} (${era})`;
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
      const view: ServersView =
        (await callDaemon<typeof API.mcpServers, ServersView>(home, io.env, API.mcpServers))?.answer ?? mcpServersView(config, undefined);
      if (options.json === true) {
        io.stdout(`${JSON.stringify(view, null, 2)}\n`);
        return;
      }
      if (view.configured.length === 0) {
        io.stdout('No MCP servers configured. Add [[mcp_servers]] to config.toml (see docs/mcp.md).\n');
        return;
      }
      io.stdout(
        formatTable(
          ['NAME', 'TRANSPORT', 'STATE', 'PROTOCOL', 'TOOLS'],
          view.configured.map((server) => [
            server.name,
            server.transport,
            server.error === undefined ? server.status : `${server.status}: ${server.error}`,
            protocolOf(server),
            server.tools.map((tool) => tool.name).join(', ') || '-',
          ]),
        ),
      );
      // What needs a person, with the command that does it; and why a server speaks the older era.
      for (const server of view.configured) {
        if (server.action !== undefined) io.stdout(`\n${server.name} needs you: run "${server.action.command}" (${server.action.reason})\n`);
      }
      for (const server of view.configured) {
        for (const tool of server.refused_tools ?? []) io.stdout(`\n${server.name}: ${tool.name} is left out of agents' tools: ${tool.reason}\n`);
      }
      for (const server of view.configured) {
        if (server.era === 'legacy' && server.era_reason !== undefined) io.stdout(`\n${server.name} speaks a 2025 revision: ${server.era_reason}\n`);
      }
    });
}
