import { stringify } from 'smol-toml';
import { useEffect, useState } from 'preact/hooks';
import { API, call, type Failure, failureOf } from '../api.ts';
import { AgentStateBadge, CannotRunNotice, Card, Empty, ErrorBox, ModelName, PageHeader, Segmented } from '../components.tsx';
import { ThoughtTracePanel, WorkflowPanel } from './agent-type-panels.tsx';
import { errorText, formatCost, formatTime, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href, navigate } from '../router.ts';
import { toTranscript } from '../session.ts';
import { useEventVersion } from '../store.ts';
import type { AgentDetailView, AgentView, Capability } from '../types.ts';
import { usageByAgent } from './agents-page.tsx';
import { ManifestEditor, WarningList } from './manifest-editor.tsx';
import { ScheduleRunsPanel } from './schedule-runs-panel.tsx';
import { Transcript } from './transcript.tsx';
import './agent-page.css';

/** The installed skills an agent's manifest offers it: each, whether its instructions fit in the prompt, and why a skill it names is not offered. */
function SkillsCard({ skills, allowlist }: { skills: NonNullable<AgentDetailView['skills']>; allowlist: unknown }) {
  const all = !Array.isArray(allowlist) || allowlist.length === 0;
  return (
    <Card title={`Skills (${skills.skills.length})`}>
      {skills.skills.length === 0 ? (
        <Empty>{all ? 'No skills installed: skills = [] offers every installed skill.' : 'None of the skills its manifest names is installed.'}</Empty>
      ) : (
        <ul class="capabilities" aria-label="Skills">
          {skills.skills.map((skill) => (
            <li key={skill.skill} title={skill.description}>
              <span class="cap-kind mono">{skill.name}</span>
              <span class="mono">{skill.skill}</span>
              {skill.in_prompt ? null : <span class="muted"> listed by name only: past the {skills.budget_bytes}-byte budget</span>}
            </li>
          ))}
        </ul>
      )}
      <WarningList warnings={skills.problems} label="Skills not offered" testId="skill-problems" />
    </Card>
  );
}

/** How long the page says an agent was killed before it goes to the agent list. */
export const KILLED_NOTICE_MS = 1_500;

/** How often a page whose daemon went away asks again. */
const RETRY_GONE_MS = 3_000;

/**
 * The agent, fetched again on each kernel event; on a failure the last good answer stays (a
 * daemon that went away does not blank the page) and the failure says what happened.
 */
function useAgent(name: string, version: number): { data: AgentDetailView | undefined; failure: Failure | undefined; reload: () => void } {
  const [data, setData] = useState<AgentDetailView | undefined>(undefined);
  const [failure, setFailure] = useState<Failure | undefined>(undefined);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    call(API.getAgent, { params: { agent: name }, signal: abort.signal }).then(
      (agent) => {
        setData(agent);
        setFailure(undefined);
      },
      (error: unknown) => {
        if (abort.signal.aborted) return;
        const found = failureOf(error);
        setFailure(found);
        if (found.kind === 'not-found') setData(undefined);
        // No event comes from a daemon that is gone: ask again until it answers.
        if (found.kind === 'gone') retry = setTimeout(() => setTick((count) => count + 1), RETRY_GONE_MS);
      },
    );
    return () => {
      abort.abort();
      if (retry !== undefined) clearTimeout(retry);
    };
  }, [name, version, tick]);
  return { data, failure, reload: () => setTick((count) => count + 1) };
}

/** What a capability grants, in words: `file_read /data/*`, `llm_max_tokens 50000`. */
export function describeCapability(capability: Capability): { kind: string; value: string } {
  const { kind, ...rest } = capability;
  const values = Object.values(rest).map((value) => (typeof value === 'string' || typeof value === 'number' ? String(value) : JSON.stringify(value)));
  return { kind, value: values.join(' ') };
}

function manifestToml(manifest: Record<string, unknown>): string {
  try {
    return stringify(manifest);
  } catch (error) {
    return `# cannot show as TOML: ${errorText(error)}\n${JSON.stringify(manifest, null, 2)}`;
  }
}

function AgentLink({ id, agents }: { id: string; agents: readonly AgentView[] }) {
  const agent = agents.find((candidate) => candidate.id === id);
  if (agent === undefined) return <span class="mono muted">{id.slice(0, 8)}</span>;
  return (
    <a href={href.agent(agent.name)} class="chip">
      {agent.name}
    </a>
  );
}

export function AgentPage({ name }: { name: string }) {
  const version = useEventVersion();
  const agent = useAgent(name, version);
  const agents = useApi(API.listAgents, {}, [version]);
  const usage = useApi(API.usage, { query: { agent: name } }, [version]);
  // The daemon's today (its midnight in [scheduler].timezone, as the daily budget counts), not the browser's.
  const usageToday = useApi(API.usageToday, { query: { agent: name } }, [version]);
  const session = useApi(API.session, { params: { agent: name } }, [version]);
  const [view, setView] = useState<'toml' | 'json'>('toml');
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [confirmKill, setConfirmKill] = useState(false);
  const [killed, setKilled] = useState<AgentView[] | undefined>(undefined);
  const [editing, setEditing] = useState(false);
  const [savedWarnings, setSavedWarnings] = useState<string[]>([]);

  // Once killed, the page says so, then goes to the agent list.
  useEffect(() => {
    if (killed === undefined) return undefined;
    const timer = setTimeout(() => navigate(href.agents), KILLED_NOTICE_MS);
    return () => clearTimeout(timer);
  }, [killed]);

  const act = async (action: 'suspend' | 'resume' | 'kill'): Promise<void> => {
    setBusy(true);
    setActionError(undefined);
    try {
      if (action === 'kill') setKilled(await call(API.killAgent, { params: { agent: name } }));
      else {
        await call(action === 'suspend' ? API.suspendAgent : API.resumeAgent, { params: { agent: name } });
        agent.reload();
      }
    } catch (error) {
      setActionError(errorText(error));
    } finally {
      setBusy(false);
      setConfirmKill(false);
    }
  };

  if (killed !== undefined) {
    const others = killed.filter((view) => view.name !== name).map((view) => view.name);
    return (
      <div class="page">
        <PageHeader title={name} subtitle={<a href={href.agents}>← Agents</a>} />
        <div class="agent-gone" role="status" data-testid="agent-killed">
          <strong>{name} was killed</strong>
          {others.length === 0 ? '' : `, with ${others.join(', ')}`}: its session and memory are gone. Going to the <a href={href.agents}>agent list</a>…
        </div>
      </div>
    );
  }

  const gone =
    agent.failure?.kind === 'gone' ? (
      <div class="agent-gone" role="status" data-testid="daemon-gone">
        {agent.failure.message}
      </div>
    ) : null;

  if (agent.data === undefined) {
    return (
      <div class="page">
        <PageHeader title={name} subtitle={<a href={href.agents}>← Agents</a>} />
        {agent.failure === undefined ? (
          <Empty>Loading…</Empty>
        ) : agent.failure.kind === 'not-found' ? (
          <Empty>
            <span data-testid="no-such-agent">
              No such agent: there is no agent named “{name}”. See the <a href={href.agents}>agent list</a>.
            </span>
          </Empty>
        ) : agent.failure.kind === 'gone' ? (
          gone
        ) : (
          <ErrorBox message={agent.failure.message} />
        )}
      </div>
    );
  }
  const data = agent.data;
  const total = usageByAgent(usage.data ?? []).get(data.id);
  const today = usageToday.data;
  const transcript = toTranscript(session.data?.messages ?? []);
  const scheduleMode = (data.manifest['schedule'] as { mode?: string } | undefined)?.mode;

  return (
    <div class="page">
      <PageHeader
        title={
          <span class="title-with-badge">
            {data.name} <AgentStateBadge agent={data} />
          </span>
        }
        subtitle={
          <span>
            <a href={href.agents}>Agents</a> / <span class="mono">{data.id}</span>
          </span>
        }
        actions={
          <>
            <a class="btn btn-primary" href={href.chat(data.name)}>
              Chat
            </a>
            {!editing ? (
              <button type="button" class="btn" onClick={() => setEditing(true)}>
                Edit manifest
              </button>
            ) : null}
            {data.state === 'running' ? (
              <button type="button" class="btn" disabled={busy} onClick={() => void act('suspend')}>
                Suspend
              </button>
            ) : null}
            {data.state === 'suspended' ? (
              <button type="button" class="btn" disabled={busy} onClick={() => void act('resume')}>
                Resume
              </button>
            ) : null}
            {confirmKill ? (
              <button type="button" class="btn btn-danger" disabled={busy} onClick={() => void act('kill')}>
                Really kill?
              </button>
            ) : (
              <button type="button" class="btn btn-danger-ghost" disabled={busy} onClick={() => setConfirmKill(true)}>
                Kill
              </button>
            )}
          </>
        }
      />
      {gone}
      <CannotRunNotice agent={data} />
      <ErrorBox message={actionError} />
      <WarningList warnings={savedWarnings} label="Warnings about the saved manifest" testId="saved-warnings" />
      <div class="stats">
        <div class="stat">
          <div class="stat-label">Model</div>
          <div class="stat-value mono" data-testid="agent-model">
            <ModelName agent={data} />
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Tokens</div>
          <div class="stat-value mono">{formatTokens(total?.tokens ?? 0)}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Cost</div>
          <div class="stat-value mono">{formatCost(total?.cost ?? 0)}</div>
        </div>
        <div class="stat">
          <div class="stat-label" title={today === undefined ? undefined : `since midnight in ${today.timezone}, the day the daily budget counts`}>
            Spent today <span data-testid="spent-today-zone">({today?.timezone ?? '…'})</span>
          </div>
          <div class="stat-value mono" data-testid="spent-today">
            {formatTokens(today?.tokens ?? 0)} · {formatCost(today?.cost_usd ?? 0)}
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Created</div>
          <div class="stat-value">{formatTime(data.created_at)}</div>
        </div>
      </div>
      <div class="grid-2">
        <Card title="Overview">
          <dl class="facts">
            <dt>Description</dt>
            <dd>{data.description === '' ? <span class="muted">none</span> : data.description}</dd>
            <dt>Module</dt>
            <dd class="mono">{data.module}</dd>
            <dt>Schedule</dt>
            <dd class="mono">{data.schedule}</dd>
            <dt>Version</dt>
            <dd class="mono">{data.version}</dd>
            <dt>Parent</dt>
            <dd>{data.parent === null ? <span class="muted">none</span> : <AgentLink id={data.parent} agents={agents.data ?? []} />}</dd>
            <dt>Children</dt>
            <dd class="chips">
              {data.children.length === 0 ? (
                <span class="muted">none</span>
              ) : (
                data.children.map((child) => <AgentLink key={child} id={child} agents={agents.data ?? []} />)
              )}
            </dd>
            <dt>Tags</dt>
            <dd class="chips">
              {data.tags.length === 0 ? (
                <span class="muted">none</span>
              ) : (
                data.tags.map((tag) => (
                  <span key={tag} class="chip">
                    {tag}
                  </span>
                ))
              )}
            </dd>
            <dt>Session</dt>
            <dd class="mono">{data.session_id}</dd>
          </dl>
        </Card>
        <Card title={`Capabilities (${data.capabilities.length})`}>
          {data.capabilities.length === 0 ? (
            <Empty>No capabilities: this agent may only talk.</Empty>
          ) : (
            <ul class="capabilities" aria-label="Capabilities">
              {data.capabilities.map((capability, index) => {
                const { kind, value } = describeCapability(capability);
                return (
                  <li key={index}>
                    <span class="cap-kind mono">{kind}</span>
                    <span class="mono">{value}</span>
                  </li>
                );
              })}
            </ul>
          )}
        </Card>
        {data.skills === undefined ? null : <SkillsCard skills={data.skills} allowlist={data.manifest['skills']} />}
      </div>
      {scheduleMode === 'continuous' || scheduleMode === 'periodic' ? <ScheduleRunsPanel name={data.name} version={version} /> : null}
      {data.module === 'builtin:workflow' ? <WorkflowPanel name={data.name} version={version} /> : null}
      {data.module === 'builtin:chain-of-thought' ? <ThoughtTracePanel name={data.name} version={version} /> : null}
      {editing ? (
        <ManifestEditor
          agent={data.name}
          initialText={manifestToml(data.manifest)}
          onCancel={() => setEditing(false)}
          onSaved={(saved) => {
            setEditing(false);
            setSavedWarnings(saved.warnings);
            agent.reload();
          }}
        />
      ) : null}
      <Card
        title="Manifest"
        actions={
          <Segmented
            label="Manifest view"
            value={view}
            options={[
              ['toml', 'TOML'],
              ['json', 'JSON'],
            ]}
            onChange={setView}
          />
        }
      >
        <pre class="code" data-testid="manifest" tabIndex={0} aria-label="Manifest">
          {view === 'toml' ? manifestToml(data.manifest) : JSON.stringify(data.manifest, null, 2)}
        </pre>
      </Card>
      <Card
        title={`Session history (${transcript.length})`}
        actions={
          <a class="btn btn-small btn-ghost" href={href.chat(data.name)}>
            Continue in chat →
          </a>
        }
      >
        {transcript.length === 0 ? <Empty>No messages yet.</Empty> : <Transcript items={transcript} />}
      </Card>
    </div>
  );
}
