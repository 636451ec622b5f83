import { useEffect, useRef, useState } from 'preact/hooks';
import { decideApproval, streamMessage } from '../api.ts';
import { ErrorBox, PageHeader, StateBadge } from '../components.tsx';
import { errorText, formatCost, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { toTranscript } from '../session.ts';
import type { AgentEvent, AgentView, SessionView, TurnView } from '../types.ts';
import { ToolCallLine, ToolResultLine, Transcript } from './transcript.tsx';

type Part =
  | { kind: 'text'; text: string }
  | { kind: 'tool-call'; toolName: string; input: unknown }
  | { kind: 'tool-result'; toolName: string; text: string; isError: boolean }
  | { kind: 'approval'; approvalId: string; toolCallId: string; toolName: string; input: unknown; outcome: 'approved' | 'denied' | undefined };

interface Turn {
  message: string;
  parts: Part[];
  phase: string | undefined;
  result: TurnView | undefined;
  error: string | undefined;
  done: boolean;
}

/** Folds one streamed event into the turn; text deltas extend the last text part. */
export function applyEvent(turn: Turn, event: AgentEvent): Turn {
  switch (event.type) {
    case 'text-delta': {
      const parts = [...turn.parts];
      const last = parts.at(-1);
      if (last?.kind === 'text') parts[parts.length - 1] = { kind: 'text', text: last.text + event.text };
      else parts.push({ kind: 'text', text: event.text });
      return { ...turn, parts, phase: undefined };
    }
    case 'tool-call':
      return { ...turn, parts: [...turn.parts, { kind: 'tool-call', toolName: event.toolName, input: event.input }], phase: `running ${event.toolName}` };
    case 'tool-result':
      return {
        ...turn,
        // A call decided elsewhere (the approvals page, the CLI) shows its outcome here too.
        parts: [
          ...turn.parts.map((part): Part => (part.kind === 'approval' && part.toolCallId === event.toolCallId && part.outcome === undefined ? { ...part, outcome: event.isError ? 'denied' : 'approved' } : part)),
          { kind: 'tool-result', toolName: event.toolName, text: event.text, isError: event.isError },
        ],
        phase: undefined,
      };
    case 'approval-request':
      return { ...turn, parts: [...turn.parts, { kind: 'approval', approvalId: event.approvalId, toolCallId: event.toolCallId, toolName: event.toolName, input: event.input, outcome: undefined }], phase: `waiting for approval of ${event.toolName}` };
    case 'phase':
      return { ...turn, phase: event.detail === '' ? event.phase : `${event.phase}: ${event.detail}` };
    case 'run-finish':
      return { ...turn, result: event.result, phase: undefined, done: true };
    case 'error':
      return { ...turn, error: `${event.code}: ${event.message}`, phase: undefined, done: true };
    case 'run-start':
      return { ...turn, phase: 'thinking' };
  }
}

/** A tool call waiting for approval, with Approve and Deny buttons (the tool's result follows in the stream). */
function ApprovalLine({ approvalId, toolName, input, outcome }: { approvalId: string; toolName: string; input: unknown; outcome: 'approved' | 'denied' | undefined }) {
  const [clicked, setStatus] = useState<'pending' | 'busy' | 'approved' | 'denied'>('pending');
  const status = clicked === 'approved' || clicked === 'denied' ? clicked : (outcome ?? clicked);
  const [error, setError] = useState<string | undefined>(undefined);
  const decide = async (approved: boolean): Promise<void> => {
    setStatus('busy');
    setError(undefined);
    try {
      const view = await decideApproval(approvalId, approved);
      setStatus(view.status === 'approved' ? 'approved' : 'denied');
    } catch (cause) {
      setError(errorText(cause));
      setStatus('pending');
    }
  };
  return (
    <div class="approval-line" data-testid="approval-request">
      <span class="tool-icon">⏸</span>
      <span class="mono">
        <strong>{toolName}</strong>
        <span class="muted">({JSON.stringify(input)})</span>
      </span>
      {status === 'approved' || status === 'denied' ? (
        <span class="approval-status">{status}</span>
      ) : (
        <>
          <span class="approval-status">needs your approval</span>
          <button type="button" class="btn btn-small btn-primary" disabled={status === 'busy'} onClick={() => void decide(true)}>
            Approve
          </button>
          <button type="button" class="btn btn-small btn-danger-ghost" disabled={status === 'busy'} onClick={() => void decide(false)}>
            Deny
          </button>
        </>
      )}
      <ErrorBox message={error} />
    </div>
  );
}

function TurnView({ turn }: { turn: Turn }) {
  return (
    <div class="turn">
      <div class="bubble bubble-user">
        <div class="bubble-role">You</div>
        <div class="bubble-text">{turn.message}</div>
      </div>
      {turn.parts.map((part, index) => {
        switch (part.kind) {
          case 'text':
            return (
              <div key={index} class="bubble bubble-agent" data-testid="reply">
                <div class="bubble-role">Agent</div>
                <div class="bubble-text">
                  {part.text}
                  {!turn.done && index === turn.parts.length - 1 ? <span class="caret" /> : null}
                </div>
              </div>
            );
          case 'tool-call':
            return <ToolCallLine key={index} toolName={part.toolName} input={part.input} />;
          case 'tool-result':
            return <ToolResultLine key={index} toolName={part.toolName} text={part.text} isError={part.isError} />;
          case 'approval':
            return <ApprovalLine key={index} approvalId={part.approvalId} toolName={part.toolName} input={part.input} outcome={part.outcome} />;
        }
      })}
      {!turn.done ? (
        <div class="thinking">
          <span class="spinner" /> {turn.phase ?? 'waiting for the agent'}…
        </div>
      ) : null}
      {turn.error === undefined ? null : <ErrorBox message={turn.error} />}
      {turn.result === undefined ? null : (
        <div class="turn-usage" data-testid="turn-usage">
          {formatTokens(turn.result.usage.input_tokens)} in · {formatTokens(turn.result.usage.output_tokens)} out · {formatCost(turn.result.cost_usd)} · {turn.result.iterations} model call
          {turn.result.iterations === 1 ? '' : 's'} · <span class="mono">{turn.result.model}</span>
        </div>
      )}
    </div>
  );
}

export function ChatPage({ name }: { name: string }) {
  const agent = useApi<AgentView>(`/api/agents/${encodeURIComponent(name)}`);
  const session = useApi<SessionView>(`/api/agents/${encodeURIComponent(name)}/session`);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [draft, setDraft] = useState('');
  const sending = turns.some((turn) => !turn.done);
  const bottom = useRef<HTMLDivElement>(null);
  const abort = useRef<AbortController | undefined>(undefined);

  useEffect(() => () => abort.current?.abort(), []);
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' });
  }, [turns]);

  const send = async (event: Event): Promise<void> => {
    event.preventDefault();
    const message = draft.trim();
    if (message === '' || sending) return;
    setDraft('');
    const index = turns.length;
    const update = (change: (turn: Turn) => Turn): void => setTurns((current) => current.map((turn, i) => (i === index ? change(turn) : turn)));
    setTurns((current) => [...current, { message, parts: [], phase: undefined, result: undefined, error: undefined, done: false }]);
    abort.current = new AbortController();
    try {
      await streamMessage(name, message, (agentEvent) => update((turn) => applyEvent(turn, agentEvent)), abort.current.signal);
      update((turn) => ({ ...turn, done: true }));
    } catch (error) {
      update((turn) => ({ ...turn, error: errorText(error), done: true }));
    }
  };

  const history = toTranscript(session.data?.messages ?? []);
  return (
    <div class="page chat-page">
      <PageHeader
        title={
          <span class="title-with-badge">
            Chat with {name} {agent.data === undefined ? null : <StateBadge state={agent.data.state} />}
          </span>
        }
        subtitle={
          <span>
            <a href={href.agents}>Agents</a> / <a href={href.agent(name)}>{name}</a> / chat
          </span>
        }
      />
      <ErrorBox message={agent.error} />
      <div class="chat-log" aria-live="polite">
        {history.length === 0 && turns.length === 0 ? <div class="empty">Say something to {name}. The reply streams in as it is written; tool calls show as they happen.</div> : null}
        {history.length === 0 ? null : (
          <>
            <Transcript items={history} />
            <div class="divider">earlier messages above</div>
          </>
        )}
        {turns.map((turn, index) => (
          <TurnView key={index} turn={turn} />
        ))}
        <div ref={bottom} />
      </div>
      <form class="composer" onSubmit={(event) => void send(event)}>
        <textarea
          aria-label="Message"
          placeholder={`Message ${name}… (Enter to send, Shift+Enter for a new line)`}
          rows={2}
          value={draft}
          onInput={(event) => setDraft(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey) {
              event.preventDefault();
              event.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <button type="submit" class="btn btn-primary" disabled={sending || draft.trim() === ''}>
          {sending ? 'Replying…' : 'Send'}
        </button>
      </form>
    </div>
  );
}
