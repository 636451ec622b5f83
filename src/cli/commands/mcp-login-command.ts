import type { Command } from 'commander';
import { UsageError } from '../../errors/index.ts';
import { callDaemon } from '../backend.ts';
import { API } from '../../wire/index.ts';
import { openHome } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';

/** `loom mcp login <server>`: logs Loom in to a remote MCP server behind OAuth, once. */
export function registerMcpLoginCommand(mcp: Command, io: CliIo): void {
  mcp
    .command('login <server>')
    .description(
      'log in to a remote MCP server behind OAuth ([mcp_servers.oauth], authorization_code): prints the address to open, keeps the tokens for the daemon; run it again when the daemon shows the server as needing a login (a wider scope, a new authorization server)',
    )
    .option('--timeout <seconds>', 'how long to wait for the browser to come back', '300')
    .addHelpText(
      'after',
      '\nThe tokens are kept in LOOM_HOME/data/mcp-oauth/<server>.json (readable by you only) and refreshed by the\ndaemon; a running daemon is told to reconnect to the server at once.\n\nExample:\n  $ loom mcp login tracker\n',
    )
    .action(async (server: string, options: { timeout: string }) => {
      const timeoutSeconds = Number(options.timeout);
      if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new UsageError(`--timeout "${options.timeout}": expected a number of seconds`);
      const { home, config } = await openHome(io);
      const entry = config.mcp_servers.find((candidate) => candidate.name === server);
      if (entry === undefined) {
        const names = config.mcp_servers.map((candidate) => candidate.name);
        throw new UsageError(`no [[mcp_servers]] entry is named "${server}"${names.length === 0 ? '' : ` (configured: ${names.join(', ')})`}`);
      }
      // Loaded here: every command module loads with `loom start`, which needs no MCP client SDK up front.
      const { loginMcpServer } = await import('../../mcp/client/index.ts');
      await loginMcpServer(entry, {
        dir: home.mcpOAuthDir,
        env: io.env,
        timeoutMs: timeoutSeconds * 1000,
        showAuthorizationUrl: (url) => io.stderr(`Open this address to log in to "${server}":\n\n  ${url.href}\n\nWaiting for the browser to come back…\n`),
      });
      // A running daemon is told to try the server at once, not at its next backoff.
      const told = await callDaemon(home, io.env, API.reconnectMcpServer, { params: { name: server } }).then(
        (running) => (running !== undefined ? 'reconnecting' : 'no daemon'),
        (error: unknown) => {
          io.stderr(`note: the daemon could not be told to reconnect to "${server}" (${error instanceof Error ? error.message : String(error)})\n`);
          return 'not told';
        },
      );
      const next = {
        reconnecting: 'The running daemon reconnects to it now.',
        'no daemon': 'The daemon uses these tokens when it starts.',
        'not told': 'A running daemon picks the tokens up at its next connection attempt.',
      }[told];
      io.stdout(`Logged in to "${server}". ${next}\n`);
    });
}
