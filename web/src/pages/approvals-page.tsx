import { useEffect, useState } from 'preact/hooks';
import { API, decideApproval } from '../api.ts';
import { Empty, ErrorBox, PageHeader, Segmented } from '../components.tsx';
import { errorText, formatTime } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { useApprovalVersion } from '../store.ts';
import type { ApprovalView } from '../types.ts';
import { QuestionForm, questionOf } from './question-form.tsx';

/** `in 4 min 10 s`, or `overdue` once the time has passed. */
export function expiresIn(expiresAt: string, now: number): string {
  const seconds = Math.round((Date.parse(expiresAt) - now) / 1000);
  if (seconds <= 0) return 'overdue';
  if (seconds < 60) return `in ${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes} min ${seconds % 60} s`;
  return `in ${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The current time, ticking every second, for countdowns. */
function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

/** The pending approvals, reloaded whenever one is requested or decided. */
export function usePendingApprovals() {
  return useApi(API.approvals, {}, [useApprovalVersion()]);
}

function ApprovalCard({ approval, now, onDecided }: { approval: ApprovalView; now: number; onDecided: () => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const question = questionOf(approval.input);
  const decide = async (approved: boolean, answer?: Record<string, unknown>): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await decideApproval(approval.id, approved, reason, answer);
      onDecided();
    } catch (cause) {
      setError(errorText(cause));
      setBusy(false);
    }
  };
  return (
    <section
      class="card approval-card"
      data-testid="approval"
      data-approval={approval.id}
      aria-label={question === undefined ? `${approval.agent} wants to run ${approval.tool}` : `${approval.tool} asks for ${approval.agent}`}
    >
      <div class="approval-head">
        <div>
          <a class="strong" href={href.agent(approval.agent)}>
            {approval.agent}
          </a>{' '}
          <span class="muted">{question === undefined ? 'wants to run' : 'is asked by'}</span> <span class="mono strong">{approval.tool}</span>
        </div>
        <div class="small muted" title={`requested ${formatTime(approval.requested_at)}; denied at ${formatTime(approval.expires_at)} if nobody decides`}>
          expires {expiresIn(approval.expires_at, now)}
        </div>
      </div>
      {question === undefined ? (
        <pre class="approval-input" data-testid="approval-input" tabIndex={0} aria-label="Input of the call">
          {JSON.stringify(approval.input, null, 2)}
        </pre>
      ) : (
        <QuestionForm question={question} busy={busy} onAnswer={(answer) => void decide(true, answer)} />
      )}
      <ErrorBox message={error} />
      <div class="approval-actions">
        <input
          class="search"
          type="text"
          aria-label="Reason"
          placeholder="Reason (optional)"
          value={reason}
          disabled={busy}
          onInput={(event) => setReason(event.currentTarget.value)}
        />
        <button type="button" class="btn btn-danger-ghost" disabled={busy} onClick={() => void decide(false)}>
          {question === undefined ? 'Deny' : 'Decline'}
        </button>
        {question === undefined ? (
          <button type="button" class="btn btn-primary" disabled={busy} onClick={() => void decide(true)}>
            Approve
          </button>
        ) : null}
      </div>
    </section>
  );
}

/** Requests already decided (approved, denied or expired), newest first. */
function DecidedApprovals() {
  const all = useApi(API.approvals, { query: { status: 'all' } }, [useApprovalVersion()]);
  const decided = (all.data ?? []).filter((approval) => approval.status !== 'pending').reverse();
  if (all.error !== undefined) return <ErrorBox message={all.error} />;
  if (decided.length === 0) return <Empty>No request has been decided yet.</Empty>;
  return (
    <div class="card table-card">
      <table class="table" aria-label="Decided approvals">
        <thead>
          <tr>
            <th>Requested</th>
            <th>Agent</th>
            <th>Tool</th>
            <th>Decision</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {decided.map((approval) => (
            <tr key={approval.id} data-testid="decided-approval">
              <td class="small">{formatTime(approval.requested_at)}</td>
              <td>
                <a href={href.agent(approval.agent)}>{approval.agent}</a>
              </td>
              <td class="mono">{approval.tool}</td>
              <td class="small">
                {approval.status} by {approval.decided_by ?? '?'}
                {approval.decided_at === null ? '' : `, ${formatTime(approval.decided_at)}`}
              </td>
              <td class="small">{approval.reason ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ApprovalsPage() {
  const pending = usePendingApprovals();
  const now = useNow();
  const [showDecided, setShowDecided] = useState(false);
  const list = pending.data ?? [];
  return (
    <div class="page">
      <PageHeader
        actions={
          <Segmented
            label="Which approvals"
            value={showDecided ? 'decided' : 'pending'}
            options={[
              ['pending', 'Pending'],
              ['decided', 'Decided'],
            ]}
            onChange={(which) => setShowDecided(which === 'decided')}
          />
        }
        title="Approvals"
        subtitle={
          <span>
            Tool calls waiting for a person: tools listed in an agent's <code>[autonomous].approval_required_for</code>. Nobody deciding denies them when they
            expire.
          </span>
        }
      />
      <ErrorBox message={pending.error} />
      {showDecided ? (
        <DecidedApprovals />
      ) : pending.data === undefined ? null : list.length === 0 ? (
        <Empty>No tool calls are waiting for approval. New requests appear here as they are made.</Empty>
      ) : (
        <div class="approval-list">
          {list.map((approval) => (
            <ApprovalCard key={approval.id} approval={approval} now={now} onDecided={pending.reload} />
          ))}
        </div>
      )}
    </div>
  );
}
