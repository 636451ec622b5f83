import { useState } from 'preact/hooks';
import { API, demoteForgedTool, promoteForgedTool } from '../api.ts';
import { Empty, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatTime } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import type { ForgedToolView } from '../types.ts';
import { McpServersPanel } from './mcp-servers-panel.tsx';

const percent = (value: number | null): string => (value === null ? '—' : `${Math.round(value * 100)}%`);
const millis = (value: number | null): string => (value === null ? '—' : `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`);

/** The implementation: the steps of a compose tool, or a sandbox tool's source when it is stored. */
function Implementation({ tool }: { tool: ForgedToolView }) {
  const implementation = tool.request.implementation;
  if (implementation?.mode === 'compose') {
    return (
      <ol class="small" data-testid="tool-steps">
        {(implementation.steps ?? []).map((step) => (
          <li key={step.name}>
            <span class="strong">{step.name}</span>: <span class="mono">{step.tool}</span>{' '}
            <span class="muted mono">{JSON.stringify(step.inputMapping ?? {})}</span>
          </li>
        ))}
      </ol>
    );
  }
  return (
    <div>
      <div class="small muted">allowlist: {(implementation?.allowlist ?? []).join(', ') || 'none'}</div>
      {implementation?.code === undefined ? (
        <p class="small muted" data-testid="tool-source">
          Source not stored (<code>persist_sandbox_source = false</code>); sha256 <span class="mono">{tool.codeHash ?? '?'}</span>
        </p>
      ) : (
        <pre class="approval-input" data-testid="tool-source" tabIndex={0} aria-label="Source">
          {implementation.code}
        </pre>
      )}
    </div>
  );
}

function ToolDetail({ tool, onChanged }: { tool: ForgedToolView; onChanged: () => void }) {
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const act = async (work: () => Promise<string>): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      setNote(await work());
      onChanged();
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(false);
    }
  };
  const promote = () =>
    act(async () => {
      const result = await promoteForgedTool(tool.id);
      if (result.outcome === 'promoted') return `Promoted to the ${result.tool.tier} tier.`;
      if (result.outcome === 'pending-approval')
        return `Waiting for a person's approval (request ${result.approvalId ?? ''}): decide it on the Approvals page.`;
      return `Not promoted: ${result.reason ?? 'no reason given'}`;
    });
  const demote = () => act(async () => `Now ${(await demoteForgedTool(tool.id)).tier} tier.`);
  return (
    <section class="card" data-testid="tool-detail" aria-label={`Forged tool ${tool.name}`}>
      <div class="approval-head">
        <div>
          <span class="strong mono">{tool.name}</span> <span class="muted">by</span> <a href={href.agent(tool.agent)}>{tool.agent}</a>
          <div class="small muted">{tool.description}</div>
        </div>
        <div class="approval-actions">
          <button type="button" class="btn btn-primary" disabled={busy || tool.status !== 'active' || tool.tier === 'shared'} onClick={() => void promote()}>
            Promote
          </button>
          <button type="button" class="btn btn-danger-ghost" disabled={busy || tool.status !== 'active'} onClick={() => void demote()}>
            Demote
          </button>
        </div>
      </div>
      {note === undefined ? null : (
        <p class="small" data-testid="tool-note">
          {note}
        </p>
      )}
      <ErrorBox message={error} />
      <p class="small">
        {tool.mode}, {tool.origin}, {tool.tier} tier, {tool.status}
        {tool.statusReason === null ? '' : ` (${tool.statusReason})`}; forged {formatTime(tool.createdAt)}
      </p>
      <h3 class="small strong">Verdicts</h3>
      <ul class="small" data-testid="tool-verdicts">
        {tool.verdicts.map((verdict, index) => (
          <li key={index}>
            {verdict.role ?? 'review'}: {verdict.approved === true ? 'approved' : 'refused'}, confidence {verdict.confidence ?? '?'}
            {(verdict.issues ?? []).length === 0 ? '' : ` — ${(verdict.issues ?? []).join('; ')}`}
          </li>
        ))}
      </ul>
      <h3 class="small strong">Schemas</h3>
      <pre class="approval-input" tabIndex={0} aria-label="Schemas">
        {JSON.stringify({ input: tool.request.inputSchema, output: tool.request.outputSchema ?? null }, null, 2)}
      </pre>
      <h3 class="small strong">{tool.mode === 'compose' ? 'Steps' : 'Code'}</h3>
      <Implementation tool={tool} />
    </section>
  );
}

/** Forged tools (spec/02): tier, status, stats; a tool's verdicts, schemas and implementation; promote and demote. */
export function ForgedToolsPage() {
  const tools = useApi(API.forgedTools);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const list = tools.data ?? [];
  const current = list.find((tool) => tool.id === selected);
  return (
    <div class="page">
      <PageHeader
        title="Tools"
        subtitle={
          <span>
            Tools agents forged for themselves: tested, judged, then offered in the session; a panel keeps them for the agent; a person's approval shares them.
            See <code>docs/forged-tools.md</code>.
          </span>
        }
      />
      <ErrorBox message={tools.error} />
      {tools.data === undefined ? null : list.length === 0 ? (
        <Empty>No forged tools yet. An agent with [emergent] and the forge_tool grant makes them when it needs one.</Empty>
      ) : (
        <div class="card table-card">
          <table class="table" aria-label="Forged tools">
            <thead>
              <tr>
                <th>Name</th>
                <th>Agent</th>
                <th>Tier</th>
                <th>Status</th>
                <th>Mode</th>
                <th>Calls</th>
                <th>Success</th>
                <th>Mean</th>
              </tr>
            </thead>
            <tbody>
              {list.map((tool) => (
                <tr key={tool.id} data-testid="forged-tool">
                  <td>
                    <button type="button" class="link-button mono" onClick={() => setSelected(tool.id)}>
                      {tool.name}
                    </button>
                  </td>
                  <td>{tool.agent}</td>
                  <td>{tool.tier}</td>
                  <td>{tool.status}</td>
                  <td>{tool.mode}</td>
                  <td>{tool.calls}</td>
                  <td>{percent(tool.successRate)}</td>
                  <td>{millis(tool.meanLatencyMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {current === undefined ? null : <ToolDetail tool={current} onChanged={tools.reload} />}
      <McpServersPanel />
    </div>
  );
}
