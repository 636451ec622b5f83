import { useEffect, useRef, useState } from 'preact/hooks';
import { API, call } from '../api.ts';
import type { QueryOf } from '../../../src/wire/index.ts';
import { Empty, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatCost, formatTime, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { useEventLog } from '../store.ts';
import { AUDIT_KINDS, AUDIT_OUTCOMES, type AuditKind, type AuditOutcome, type AuditRecord, type KernelEvent } from '../types.ts';

/** Rows asked for per page of history. */
export const EVENTS_PAGE_SIZE = 50;

const KIND_LABELS: Record<AuditKind, string> = {
  turn: 'Turns',
  tool: 'Tool calls',
  refusal: 'Refusals',
  approval: 'Approvals',
  taint: 'Untrusted text',
  'model-error': 'Model errors',
  agent: 'Agent lifecycle',
  forge: 'Forged tools',
  package: 'Packages',
  channel: 'Channels',
  schedule: 'Scheduled wake-ups',
  reasoning: 'Reasoning and workflows',
};

const OUTCOME_LABELS: Record<AuditOutcome, string> = { ok: 'Succeeded', refused: 'Refused', failed: 'Failed', cancelled: 'Cancelled' };

interface Filters {
  agent: string;
  kind: AuditKind | '';
  outcome: AuditOutcome | '';
}

/** One line of the page, from the stored history or the live stream. */
interface Row {
  key: string;
  /** Where a stored row is in the audit log (none on a live one). */
  seq?: number;
  at: number;
  type: string;
  agentId: string | null;
  name: string;
  data: Record<string, unknown>;
  live: boolean;
}

function fromRecord(record: AuditRecord): Row {
  const name = typeof record.data['name'] === 'string' ? record.data['name'] : (record.agentId ?? '');
  return { key: `seq-${record.seq}`, seq: record.seq, at: record.at, type: record.type, agentId: record.agentId, name, data: record.data, live: false };
}

function fromLive(event: KernelEvent, index: number): Row {
  const { type, at, agentId, ...data } = event;
  return { key: `live-${index}-${at}-${type}`, at, type, agentId, name: event.name, data, live: true };
}

/** The same event from the stream and the history: matched by time, type and agent. */
function sameEvent(row: Row, other: Row): boolean {
  return row.at === other.at && row.type === other.type && row.agentId === other.agentId;
}

function auditQuery(filters: Filters, before: number | undefined): QueryOf<typeof API.audit> {
  const chosen = (value: string): string | undefined => (value === '' ? undefined : value);
  return {
    order: 'desc',
    limit: String(EVENTS_PAGE_SIZE),
    agent: chosen(filters.agent),
    kind: chosen(filters.kind),
    outcome: chosen(filters.outcome),
    before: before === undefined ? undefined : String(before),
  };
}

function matches(row: Row, filters: Filters): boolean {
  if (filters.agent !== '' && row.name !== filters.agent && row.agentId !== filters.agent) return false;
  if (filters.kind !== '' && !(AUDIT_KINDS[filters.kind] as readonly string[]).includes(row.type)) return false;
  if (filters.outcome !== '' && !(AUDIT_OUTCOMES[filters.outcome] as readonly string[]).includes(row.type)) return false;
  return true;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value));
const duration = (value: unknown): string => (typeof value !== 'number' ? '' : value < 1000 ? `${value} ms` : `${(value / 1000).toFixed(1)} s`);

/** What a row says in a line: the parts a person reads first, the rest is under "details". */
export function summarize(type: string, data: Record<string, unknown>): string {
  switch (type) {
    case 'turn-finish':
      return [
        text(data['model']),
        `${text(data['iterations'])} model ${data['iterations'] === 1 ? 'call' : 'calls'}`,
        `${formatTokens(Number(data['inputTokens'] ?? 0))} in / ${formatTokens(Number(data['outputTokens'] ?? 0))} out`,
        formatCost(Number(data['costUsd'] ?? 0)),
        duration(data['durationMs']),
        `asked by ${text(data['via'])}`,
      ].join(' · ');
    case 'turn-refuse':
    case 'turn-cancel':
    case 'turn-fail':
    case 'model-fail':
      return `${text(data['code'])}: ${text(data['message'])}`;
    case 'tool-finish':
    case 'tool-fail':
      return `${text(data['tool'])} · ${duration(data['durationMs'])}`;
    case 'approval-request':
      return `${text(data['tool'])} waits for a person`;
    case 'approval-decide':
      return `${text(data['tool'])} ${text(data['status'])} by ${text(data['by'])}`;
    case 'tool-taint': {
      const source = (data['source'] ?? {}) as Record<string, unknown>;
      return `${text(data['tool'])} carries untrusted text from ${text(source['tool'])} (${text(source['origin'])}) · ${data['action'] === 'refuse' ? 'refused' : 'sent for approval'}`;
    }
    default:
      if (type.startsWith('tool-') || type === 'channel-refuse') return [text(data['tool']), text(data['reason'])].filter((part) => part !== '').join(': ');
      return '';
  }
}

function details(row: Row): string {
  const { name: _name, agentName: _agentName, ...rest } = row.data;
  return JSON.stringify(rest, null, 2);
}

/** A tone for the type badge: how it went, where the type says. */
function tone(type: string): string {
  if ((AUDIT_OUTCOMES.ok as readonly string[]).includes(type) || type === 'agent-spawn') return 'ok';
  if ((AUDIT_OUTCOMES.refused as readonly string[]).includes(type) || type === 'agent-kill') return 'refused';
  if ((AUDIT_OUTCOMES.failed as readonly string[]).includes(type)) return 'failed';
  if (type === 'turn-cancel' || type === 'agent-suspend' || type === 'approval-request' || type === 'tool-taint') return 'waiting';
  return 'neutral';
}

function FilterSelect<T extends string>({
  label,
  value,
  options,
  onChange,
}: {
  label: string;
  value: T | '';
  options: readonly (readonly [T, string])[];
  onChange: (value: T | '') => void;
}) {
  return (
    <div class="filter">
      <label for={`events-filter-${label.toLowerCase()}`}>{label}</label>
      <select id={`events-filter-${label.toLowerCase()}`} value={value} onChange={(event) => onChange(event.currentTarget.value as T | '')}>
        <option value="">All</option>
        {options.map(([key, name]) => (
          <option key={key} value={key}>
            {name}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * The audit log, newest first: the stored history a page at a time (`/api/audit?order=desc&before=`)
 * with what arrives on the live stream on top, narrowed by agent, kind and outcome.
 */
export function EventsPage() {
  const { events, state } = useEventLog();
  const [filters, setFilters] = useState<Filters>({ agent: '', kind: '', outcome: '' });
  const agents = useApi(API.listAgents);
  const [history, setHistory] = useState<Row[]>([]);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | undefined>(undefined);
  // The newest live event when the history was asked for: later ones are shown above it.
  const mark = useRef<KernelEvent | undefined>(undefined);

  const load = async (before: number | undefined, signal?: AbortSignal): Promise<void> => {
    setLoading(true);
    try {
      const page = await call<typeof API.audit, AuditRecord[]>(API.audit, { query: auditQuery(filters, before), ...(signal === undefined ? {} : { signal }) });
      const rows = page.map(fromRecord);
      setHistory((current) => (before === undefined ? rows : [...current, ...rows]));
      setMore(page.length === EVENTS_PAGE_SIZE);
      setError(undefined);
    } catch (cause) {
      if (signal?.aborted === true) return;
      setError(errorText(cause));
    }
    setLoading(false);
  };

  // A new filter starts again from the newest stored row; a reconnect may have missed some, so it reloads too.
  useEffect(() => {
    const abort = new AbortController();
    mark.current = events[0];
    void load(undefined, abort.signal);
    return () => abort.abort();
  }, [filters.agent, filters.kind, filters.outcome, state === 'open']);

  const cut = mark.current === undefined ? events.length : events.indexOf(mark.current);
  const live = events
    .slice(0, cut === -1 ? events.length : cut)
    .map((event, index) => fromLive(event, events.length - index))
    .filter((row) => matches(row, filters) && !history.some((stored) => sameEvent(stored, row)));
  const rows = [...live, ...history];
  // The next page of history is what came before the oldest stored row shown.
  const oldestSeq = history.at(-1)?.seq;
  const agentNames = [...new Set((agents.data ?? []).map((agent) => agent.name))].sort();
  const filtered = filters.agent !== '' || filters.kind !== '' || filters.outcome !== '';

  return (
    <div class="page">
      <PageHeader
        title="Events"
        subtitle={
          <span>
            <span class={`status-dot status-${state === 'open' ? 'ok' : state === 'connecting' ? 'wait' : 'down'}`} />{' '}
            {state === 'open' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Disconnected, retrying'} · the audit log, newest first: turns, tool calls,
            refusals, approvals, model errors and what agents went through
          </span>
        }
      />
      <form class="filters" aria-label="Filter events" onSubmit={(event) => event.preventDefault()}>
        <FilterSelect
          label="Agent"
          value={filters.agent}
          options={agentNames.map((name) => [name, name] as const)}
          onChange={(agent) => setFilters({ ...filters, agent })}
        />
        <FilterSelect
          label="Kind"
          value={filters.kind}
          options={Object.entries(KIND_LABELS) as [AuditKind, string][]}
          onChange={(kind) => setFilters({ ...filters, kind })}
        />
        <FilterSelect
          label="Outcome"
          value={filters.outcome}
          options={Object.entries(OUTCOME_LABELS) as [AuditOutcome, string][]}
          onChange={(outcome) => setFilters({ ...filters, outcome })}
        />
        {filtered ? (
          <button type="button" class="btn btn-small" onClick={() => setFilters({ agent: '', kind: '', outcome: '' })}>
            Clear filters
          </button>
        ) : null}
      </form>
      <ErrorBox message={error} />
      {rows.length === 0 ? (
        loading ? null : (
          <Empty>
            {filtered
              ? 'No event matches these filters.'
              : 'Nothing has happened yet. Turns, tool calls, approvals and agents spawned, suspended or killed show up here.'}
          </Empty>
        )
      ) : (
        <div class="card table-card">
          <table class="table" aria-label="Events">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Event</th>
                <th scope="col">Agent</th>
                <th scope="col">What happened</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.key} class={row.live ? 'event-row live' : 'event-row'} data-type={row.type}>
                  <td class="mono small nowrap">{formatTime(row.at)}</td>
                  <td>
                    <span class={`event-type tone-${tone(row.type)}`}>{row.type}</span>
                  </td>
                  <td>
                    {row.name === '' ? (
                      <span class="muted">—</span>
                    ) : agentNames.includes(row.name) ? (
                      <a href={href.agent(row.name)}>{row.name}</a>
                    ) : (
                      <span>{row.name}</span>
                    )}
                  </td>
                  <td class="event-what">
                    <span>{summarize(row.type, row.data)}</span>
                    <details>
                      <summary>details</summary>
                      <pre class="event-details" tabIndex={0} aria-label="Details">
                        {details(row)}
                      </pre>
                    </details>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {more ? (
        <div class="load-more">
          <button type="button" class="btn" disabled={loading} onClick={() => void load(oldestSeq)}>
            {loading ? 'Loading…' : 'Load older events'}
          </button>
        </div>
      ) : history.length > 0 ? (
        <p class="muted small center">The beginning of the log.</p>
      ) : null}
    </div>
  );
}
