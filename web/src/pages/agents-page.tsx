import { useState } from 'preact/hooks';
import { API } from '../api.ts';
import { AgentStateBadge, cannotRun, Empty, ErrorBox, ModelName, PageHeader } from '../components.tsx';
import { formatCost, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href, navigate } from '../router.ts';
import { useEventVersion } from '../store.ts';
import type { UsageRow } from '../types.ts';
import { ManifestEditor } from './manifest-editor.tsx';

/** Tokens and cost of each agent, all models added up. */
export function usageByAgent(rows: readonly UsageRow[]): Map<string, { tokens: number; cost: number }> {
  const totals = new Map<string, { tokens: number; cost: number }>();
  for (const row of rows) {
    const total = totals.get(row.agent_id) ?? { tokens: 0, cost: 0 };
    total.tokens += row.input_tokens + row.output_tokens;
    total.cost += row.cost_usd;
    totals.set(row.agent_id, total);
  }
  return totals;
}

export function AgentsPage() {
  const version = useEventVersion();
  const agents = useApi(API.listAgents, {}, [version]);
  const usage = useApi(API.usage, {}, [version]);
  const [editing, setEditing] = useState(false);
  const totals = usageByAgent(usage.data ?? []);
  const list = agents.data ?? [];
  const running = list.filter((agent) => agent.state === 'running' && cannotRun(agent) === null).length;
  const stuck = list.filter((agent) => cannotRun(agent) !== null).length;

  return (
    <div class="page">
      <PageHeader
        title="Agents"
        subtitle={
          agents.data === undefined
            ? 'Loading…'
            : `${list.length} agent${list.length === 1 ? '' : 's'} · ${running} running${stuck === 0 ? '' : ` · ${stuck} cannot run`}`
        }
        actions={
          editing ? undefined : (
            <button type="button" class="btn btn-primary" onClick={() => setEditing(true)}>
              + Spawn agent
            </button>
          )
        }
      />
      {editing ? <ManifestEditor onCancel={() => setEditing(false)} onSpawned={(agent) => navigate(href.agent(agent.name))} /> : null}
      <ErrorBox message={agents.error} />
      {agents.data !== undefined && list.length === 0 ? (
        <Empty>
          No agents yet. Spawn one from a manifest, or with <code>loom agent spawn manifest.toml</code>.
        </Empty>
      ) : null}
      {list.length === 0 ? null : (
        <div class="card table-card">
          <table class="table" aria-label="Agents">
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Model</th>
                <th class="num">Tokens</th>
                <th class="num">Cost</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((agent) => {
                const total = totals.get(agent.id);
                return (
                  <tr key={agent.id} data-agent={agent.name}>
                    <td>
                      <a class="strong" href={href.agent(agent.name)}>
                        {agent.name}
                      </a>
                      {agent.description === '' ? null : <div class="muted small truncate">{agent.description}</div>}
                    </td>
                    <td>
                      <AgentStateBadge agent={agent} />
                    </td>
                    <td class="mono">
                      <ModelName agent={agent} />
                    </td>
                    <td class="num mono">{formatTokens(total?.tokens ?? 0)}</td>
                    <td class="num mono">{formatCost(total?.cost ?? 0)}</td>
                    <td class="num">
                      <a class="btn btn-small btn-ghost" href={href.chat(agent.name)}>
                        Chat
                      </a>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
