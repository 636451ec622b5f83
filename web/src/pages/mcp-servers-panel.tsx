import { API } from '../api.ts';
import { Card, ErrorBox, StateBadge } from '../components.tsx';
import { useApi } from '../hooks.ts';
import type { McpServerView } from '../types.ts';

/** The protocol a server was connected with: its revision and era, or a dash before any connection. */
function Protocol({ server }: { server: McpServerView }) {
  if (server.era === undefined) return <span class="muted">—</span>;
  return (
    <span data-testid="mcp-protocol" title={server.era_reason}>
      <span class="mono">{server.protocol_version ?? '?'}</span> <span class="muted small">{server.era === 'modern' ? '2026 era' : '2025 era'}</span>
      {server.era === 'legacy' && server.era_reason !== undefined ? <div class="small muted">{server.era_reason}</div> : null}
    </span>
  );
}

/**
 * The MCP servers of `[[mcp_servers]]`: each one's state, the protocol revision and era it was
 * connected in (and why a 2025 one), its tools (and those left out, with why), and what a person
 * must do first (a login, with the command). Shown only when some are configured.
 */
export function McpServersPanel() {
  const servers = useApi(API.mcpServers);
  const list = servers.data?.configured ?? [];
  // A user key (limited to some agents) may not see the installation's servers: nothing to show it.
  if (servers.status === 403 || (servers.error === undefined && list.length === 0)) return null;
  return (
    <Card title="MCP servers" label="MCP servers">
      <p class="small muted">
        Servers whose tools agents call as <code>mcp_&lt;server&gt;_&lt;tool&gt;</code>, configured as <code>[[mcp_servers]]</code> in config.toml; see{' '}
        <code>docs/decisions/0034-mcp-era-negotiation-on-evidence.md</code> for the protocol eras.
      </p>
      <ErrorBox message={servers.error} />
      <table class="table" aria-label="MCP servers">
        <thead>
          <tr>
            <th>Name</th>
            <th>Transport</th>
            <th>State</th>
            <th>Protocol</th>
            <th>Tools</th>
          </tr>
        </thead>
        <tbody>
          {list.map((server) => (
            <tr key={server.name} data-testid="mcp-server">
              <td class="mono">{server.name}</td>
              <td>{server.transport}</td>
              <td>
                <StateBadge
                  state={server.status}
                  tone={server.status === 'connected' ? 'running' : server.status === 'failed' ? 'failed' : 'suspended'}
                  testId="mcp-state"
                />
                {server.error === undefined ? null : (
                  <div class="small muted" data-testid="mcp-error">
                    {server.error}
                  </div>
                )}
                {server.action === undefined ? null : (
                  <div class="small" data-testid="mcp-action">
                    Needs you: run <code class="mono">{server.action.command}</code> ({server.action.reason})
                  </div>
                )}
              </td>
              <td>
                <Protocol server={server} />
              </td>
              <td class="small">
                <span class="mono">{server.tools.map((tool) => tool.name).join(', ') || '—'}</span>
                {(server.refused_tools ?? []).map((tool) => (
                  <div key={tool.name} class="muted" data-testid="mcp-refused-tool">
                    Left out <span class="mono">{tool.name}</span>: {tool.reason}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Card>
  );
}
