import { Fragment } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { API, ApiError, call, decideApproval, failureOf } from '../api.ts';
import { cancelTurn, followTurn, resetSession, sendMessage } from '../chat-api.ts';
import { streamTurn } from '../turn-stream.ts';
import { type ChatItem, type ChatTurn, toChatTurns } from '../chat-history.ts';
import type { TurnRecord } from '../chat-types.ts';
import { AgentStateBadge, CannotRunNotice, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatCached, formatCost, formatTime, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Markdown } from '../markdown.tsx';
import { href } from '../router.ts';
import type { AgentEvent, AgentView, TurnView } from '../types.ts';
import { SessionPicker } from './session-picker.tsx';
import { ApprovalHeader, compactJson, ToolCallView, TraceView } from './transcript.tsx';
import '../chat.css';

type LivePart =
  | ChatItem
  | {
      kind: 'approval';
      approvalId: string;
      toolCallId: string;
      toolName: string;
      input: unknown;
      outcome: 'approved' | 'denied' | undefined;
      reason?: string | undefined;
    };

/** The turn streaming now: the person's message and what has come of it so far. */
interface LiveTurn {
  message: string;
  at: number;
  parts: LivePart[];
  phase: string | undefined;
  result: TurnView | undefined;
  error: string | undefined;
  cancelled: string | undefined;
  /** Why the turn did not run or failed: the HTTP status (200 when the stream said so) and the daemon's code and words. */
  failure: { status: number; code: string; message: string } | undefined;
  /** For a message sent from this page: how many turns the history had when it was sent. */
  after: number | undefined;
  /** While its stream is broken and taken up again: which try this is. */
  reconnecting: string | undefined;
  done: boolean;
}

/**
 * A message the daemon refused to take (a suspended agent, one with no model, a rate limit…).
 * It is in no session, so the page keeps it: after the `after` turns of the history it was sent
 * behind, with the daemon's reason.
 */
interface RefusedSend {
  id: number;
  message: string;
  at: number;
  after: number;
  status: number;
  code: string;
  reason: string;
}

function newTurn(message: string, at: number, after?: number): LiveTurn {
  return {
    message,
    at,
    parts: [],
    phase: undefined,
    result: undefined,
    error: undefined,
    cancelled: undefined,
    failure: undefined,
    after,
    reconnecting: undefined,
    done: false,
  };
}

/** Folds one streamed event into the live turn; text deltas extend the last text part, a tool result completes its call. */
function applyEvent(turn: LiveTurn, event: AgentEvent): LiveTurn {
  switch (event.type) {
    case 'text-delta': {
      const parts = [...turn.parts];
      const last = parts.at(-1);
      if (last?.kind === 'text') parts[parts.length - 1] = { kind: 'text', text: last.text + event.text };
      else parts.push({ kind: 'text', text: event.text });
      return { ...turn, parts, phase: undefined };
    }
    case 'tool-call':
      return {
        ...turn,
        parts: [
          ...turn.parts,
          {
            kind: 'tool',
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            input: event.input,
            output: undefined,
            isError: false,
            durationMs: undefined,
          },
        ],
        phase: `running ${event.toolName}`,
      };
    case 'tool-result': {
      const parts = turn.parts.map((part): LivePart => {
        // A call decided elsewhere (the approvals page, the CLI) shows its outcome here too.
        if (part.kind === 'approval' && part.toolCallId === event.toolCallId && part.outcome === undefined)
          return { ...part, outcome: event.isError ? 'denied' : 'approved' };
        if (part.kind === 'tool' && part.toolCallId === event.toolCallId)
          return { ...part, output: event.text, isError: event.isError, durationMs: event.durationMs };
        return part;
      });
      return { ...turn, parts, phase: undefined };
    }
    case 'approval-request':
      return {
        ...turn,
        parts: [
          ...turn.parts,
          {
            kind: 'approval',
            approvalId: event.approvalId,
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            input: event.input,
            outcome: undefined,
            reason: event.reason,
          },
        ],
        phase: `waiting for approval of ${event.toolName}`,
      };
    case 'phase':
      return { ...turn, phase: event.detail === '' ? event.phase : `${event.phase}: ${event.detail}` };
    case 'run-finish':
      return { ...turn, result: event.result, phase: undefined, done: true };
    case 'error':
      if (event.code === 'TURN_CANCELLED') return { ...turn, cancelled: event.message, phase: undefined, done: true };
      return {
        ...turn,
        error: `${event.code}: ${event.message}`,
        failure: { status: 200, code: event.code, message: event.message },
        phase: undefined,
        done: true,
      };
    case 'run-start':
      return { ...turn, phase: 'thinking' };
    case 'rewind':
      // The daemon restarted after this page had seen more than it saved: the turn comes again from its start.
      return { ...turn, parts: [], phase: 'the daemon restarted; the reply goes on from its last saved step' };
  }
}

/** A tool call waiting for approval, with Approve and Deny buttons and why it waits when taint tracking held it (the tool's result follows in the stream). */
function ApprovalLine({
  approvalId,
  toolName,
  input,
  outcome,
  reason,
}: {
  approvalId: string;
  toolName: string;
  input: unknown;
  outcome: 'approved' | 'denied' | undefined;
  reason: string | undefined;
}) {
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
    <ApprovalHeader toolName={toolName} input={compactJson(input)}>
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
      {reason === undefined ? null : (
        <span class="approval-reason" data-testid="approval-reason">
          {reason}
        </span>
      )}
      <ErrorBox message={error} />
    </ApprovalHeader>
  );
}

/** A time on a message: the clock time, the full date and time on hover. */
function Stamp({ at }: { at: number | undefined }) {
  if (at === undefined) return null;
  const date = new Date(at);
  return (
    <time class="stamp" dateTime={date.toISOString()} title={formatTime(at)}>
      {date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
    </time>
  );
}

function UserBubble({ text, at }: { text: string; at: number | undefined }) {
  return (
    <div class="bubble bubble-user" data-testid="user-message">
      <div class="bubble-role">
        You <Stamp at={at} />
      </div>
      <div class="bubble-text">{text}</div>
    </div>
  );
}

function AgentText({ text, at, streaming }: { text: string; at: number | undefined; streaming: boolean }) {
  return (
    <div class="bubble bubble-agent" data-testid="reply">
      <div class="bubble-role">
        Agent <Stamp at={at} />
      </div>
      <Markdown text={text} class="bubble-markdown" />
      {streaming ? <span class="caret" /> : null}
    </div>
  );
}

/** The items of a turn: text as Markdown, tool calls expandable, Loom's notes and asides set apart. */
function Items({ items, at, streaming }: { items: readonly LivePart[]; at: number | undefined; streaming: boolean }) {
  return (
    <>
      {items.map((item, index) => {
        const last = index === items.length - 1;
        switch (item.kind) {
          case 'text':
            return <AgentText key={index} text={item.text} at={last ? at : undefined} streaming={streaming && last} />;
          case 'tool':
            return <ToolCallView key={item.toolCallId === '' ? index : item.toolCallId} item={item} running={streaming} />;
          case 'note':
            return (
              <div key={index} class={`turn-note turn-note-${item.status}`} data-testid="turn-note">
                {item.text}
              </div>
            );
          case 'aside':
            return (
              <div key={index} class="turn-aside">
                {item.text}
              </div>
            );
          case 'approval':
            return (
              <ApprovalLine key={index} approvalId={item.approvalId} toolName={item.toolName} input={item.input} outcome={item.outcome} reason={item.reason} />
            );
        }
      })}
    </>
  );
}

function StatusBadge({ status, reason }: { status: 'cancelled' | 'failed'; reason: string | null | undefined }) {
  return (
    <span class={`turn-status turn-status-${status}`} data-testid="turn-status" title={reason ?? undefined}>
      {status}
    </span>
  );
}

/** Tokens (cached ones too), cost, model calls and model of a turn. */
function UsageLine({
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens,
  costUsd,
  calls,
  model,
}: {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
  costUsd: number;
  calls: number;
  model: string | null;
}) {
  return (
    <span data-testid="turn-usage">
      {formatTokens(inputTokens)} in{formatCached(cacheReadTokens, cacheWriteTokens)} · {formatTokens(outputTokens)} out · {formatCost(costUsd)} · {calls} model
      call{calls === 1 ? '' : 's'}
      {model === null ? null : (
        <>
          {' '}
          · <span class="mono">{model}</span>
        </>
      )}
    </span>
  );
}

function RecordFooter({ record }: { record: TurnRecord }) {
  const calls = record.steps.filter((step) => step.kind === 'model').length;
  return (
    <div class="turn-footer">
      {record.status === 'finished' ? null : <StatusBadge status={record.status} reason={record.reason} />}
      <UsageLine
        inputTokens={record.inputTokens}
        outputTokens={record.outputTokens}
        cacheReadTokens={record.cacheReadTokens}
        cacheWriteTokens={record.cacheWriteTokens}
        costUsd={record.costUsd}
        calls={calls}
        model={record.model}
      />
      <TraceView record={record} />
    </div>
  );
}

/** A committed turn, as the session keeps it. */
function HistoryTurn({ turn }: { turn: ChatTurn }) {
  return (
    <div class="turn" data-testid="turn" data-status={turn.record?.status ?? 'unknown'}>
      {turn.message === '' ? null : <UserBubble text={turn.message} at={turn.at} />}
      <Items items={turn.items} at={turn.record?.finishedAt} streaming={false} />
      {turn.record === undefined ? null : <RecordFooter record={turn.record} />}
    </div>
  );
}

/** The turn streaming now. */
function LiveTurnView({ turn }: { turn: LiveTurn }) {
  const running = !turn.done;
  return (
    <div class="turn turn-live" data-testid="live-turn">
      <UserBubble text={turn.message} at={turn.at} />
      <Items items={turn.parts} at={undefined} streaming={running} />
      {running && turn.reconnecting !== undefined ? (
        <div class="thinking reconnecting" role="status" data-testid="reconnecting">
          <span class="spinner" /> reconnecting… {turn.reconnecting}
        </div>
      ) : running ? (
        <div class="thinking" role="status">
          <span class="spinner" /> {turn.phase ?? 'waiting for the agent'}…
        </div>
      ) : null}
      {turn.error === undefined ? null : <ErrorBox message={turn.error} />}
      {turn.cancelled === undefined ? null : (
        <div class="turn-footer">
          <StatusBadge status="cancelled" reason={turn.cancelled} />
        </div>
      )}
      {turn.result === undefined ? null : (
        <div class="turn-footer">
          <UsageLine
            inputTokens={turn.result.usage.input_tokens}
            outputTokens={turn.result.usage.output_tokens}
            costUsd={turn.result.cost_usd}
            calls={turn.result.iterations}
            model={turn.result.model}
          />
        </div>
      )}
    </div>
  );
}

/** What to do about a refusal, by its code and the agent's state: a sentence, and the action that fixes it here when there is one. */
function refusalFix(refusal: RefusedSend, agent: AgentView | undefined): { text: string; resume: boolean } {
  if (refusal.status === 0) return { text: 'Start the daemon again (loom start, or npm start), then send it again.', resume: false };
  if (agent?.state === 'suspended') return { text: `Resume ${agent.name}, then send the message again.`, resume: true };
  if (refusal.code === 'MODULE_UNAVAILABLE' && /model/i.test(refusal.reason)) {
    return {
      text: 'Give it a model: run `loom init` (it picks a default model from your keys or a local Ollama), or add [model] to its manifest with Edit on its page; then send the message again.',
      resume: false,
    };
  }
  if (refusal.status === 429) return { text: 'Wait a moment, then send the message again.', resume: false };
  if (refusal.status === 401 || refusal.status === 403)
    return { text: 'Set an API key that may send messages to this agent (Settings, at the foot of the menu), then send it again.', resume: false };
  return { text: 'Fix what the reason says, then send the message again.', resume: false };
}

/** A message the daemon did not take: the message, why (the daemon's words) and what to do, with Resume and Send again. */
function RefusedTurn({
  refusal,
  agent,
  onResume,
  onRetry,
  busy,
}: {
  refusal: RefusedSend;
  agent: AgentView | undefined;
  onResume: () => void;
  onRetry: () => void;
  busy: boolean;
}) {
  const fix = refusalFix(refusal, agent);
  return (
    <div class="turn" data-testid="refused-turn">
      <UserBubble text={refusal.message} at={refusal.at} />
      <div class="error-box" role="alert" data-testid="refusal">
        <strong>Not sent.</strong> {refusal.reason}
      </div>
      <div class="turn-footer" data-testid="refusal-fix">
        <span class="turn-status turn-status-failed">refused</span>
        <span>{fix.text}</span>
        {fix.resume && agent !== undefined ? (
          <button type="button" class="btn btn-small btn-primary" disabled={busy} onClick={onResume}>
            Resume {agent.name}
          </button>
        ) : null}
        <button type="button" class="btn btn-small" disabled={busy} onClick={onRetry}>
          Send again
        </button>
      </div>
    </div>
  );
}

export function ChatPage({ name }: { name: string }) {
  const agent = useApi(API.getAgent, { params: { agent: name } });
  // The session shown and sent to: the caller's own (the owner's: the agent's main session) unless another is chosen.
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  const session = useApi(API.session, { params: { agent: name }, query: { session: chosen } });
  const sessions = useApi(API.sessions, { params: { agent: name } });
  const [ownId, setOwnId] = useState<string | undefined>(undefined);
  const [live, setLive] = useState<LiveTurn | undefined>(undefined);
  const [draft, setDraft] = useState('');
  const [stopping, setStopping] = useState(false);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [confirmReset, setConfirmReset] = useState(false);
  const [refused, setRefused] = useState<RefusedSend[]>([]);
  const [resuming, setResuming] = useState(false);
  const bottom = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  // Listening to a turn: aborted when the page goes, which leaves the turn running.
  const listening = useRef<AbortController | undefined>(undefined);
  const running = live !== undefined && !live.done;
  const history = useMemo(() => toChatTurns(session.data?.messages ?? []), [session.data]);

  useEffect(() => () => listening.current?.abort(), []);
  useEffect(() => {
    if (chosen === undefined && session.data !== undefined) setOwnId(session.data.id);
  }, [session.data, chosen]);
  useEffect(() => {
    input.current?.focus();
  }, []);
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' });
  }, [session.data, live]);

  /**
   * Streams a turn's events into the live turn, taking the stream up again from its last event
   * when it breaks (`streamTurn`), then shows the committed session.
   */
  const listen = async (
    start: (onEvent: (event: AgentEvent, id: string | undefined) => void, signal: AbortSignal, onOpen: () => void) => Promise<void>,
    turn: LiveTurn,
  ): Promise<void> => {
    listening.current?.abort();
    const controller = new AbortController();
    listening.current = controller;
    setLive(turn);
    const where = chosen;
    const update = (change: (current: LiveTurn) => LiveTurn): void => setLive((current) => (current === undefined ? current : change(current)));
    try {
      await streamTurn(
        start,
        (lastEventId) => (onEvent, signal, onOpen) => followTurn(name, onEvent, signal, { session: where, lastEventId, onOpen }),
        (event) => update((current) => applyEvent(current, event)),
        controller.signal,
        (state) => update((current) => ({ ...current, reconnecting: state.kind === 'live' ? undefined : `(try ${state.attempt} of ${state.of})` })),
      );
    } catch (error) {
      if (controller.signal.aborted) return;
      // A turn that ended between the session's answer and this one is in the session now.
      if (error instanceof ApiError && error.code === 'STREAM_LOST')
        update((current) => ({ ...current, error: errorText(error), reconnecting: undefined, done: true }));
      else if (!(error instanceof ApiError && error.code === 'TURN_NOT_RUNNING')) {
        const failure = {
          status: error instanceof ApiError ? error.status : 0,
          code: error instanceof ApiError ? error.code : 'ERROR',
          message: failureOf(error).message,
        };
        update((current) => ({ ...current, error: errorText(error), failure, done: true }));
      }
    }
    if (controller.signal.aborted) return;
    update((current) => ({ ...current, reconnecting: undefined, done: true }));
    setStopping(false);
    session.reload();
    sessions.reload();
  };

  // A turn running on the session shown when the page opens (started here before, or elsewhere) is followed.
  const pending = session.data?.running ?? null;
  useEffect(() => {
    if (pending === null || live !== undefined) return;
    void listen(
      (onEvent, signal, onOpen) => followTurn(name, onEvent, signal, { session: chosen, onOpen }),
      newTurn(pending.message, Date.parse(pending.received_at)),
    );
  }, [pending?.received_at, live === undefined]);

  // Once the committed session is back, it shows the turn that was live. A message sent from here
  // that failed and is not in it (refused: the agent is suspended, has no model…) stays on the
  // page as a refused message, with the daemon's reason.
  useEffect(() => {
    if (live?.done !== true) return;
    const { failure, after } = live;
    if (failure !== undefined && after !== undefined && history.length <= after) {
      setRefused((list) => [
        ...list,
        { id: (list.at(-1)?.id ?? 0) + 1, message: live.message, at: live.at, after, status: failure.status, code: failure.code, reason: failure.message },
      ]);
      agent.reload();
    }
    setLive(undefined);
  }, [session.data]);

  const deliver = (message: string): void => {
    setProblem(undefined);
    void listen((onEvent, signal) => sendMessage(name, message, onEvent, signal, chosen), newTurn(message, Date.now(), history.length));
  };

  const send = (event: Event): void => {
    event.preventDefault();
    const message = draft.trim();
    if (message === '' || running) return;
    setDraft('');
    deliver(message);
  };

  /** Sends a refused message again, in its place at the end of the conversation. */
  const retry = (refusal: RefusedSend): void => {
    if (running) return;
    setRefused((list) => list.filter((item) => item.id !== refusal.id));
    deliver(refusal.message);
  };

  const resume = async (): Promise<void> => {
    setResuming(true);
    try {
      await call(API.resumeAgent, { params: { agent: name } });
      agent.reload();
    } catch (error) {
      setProblem(`could not resume ${name}: ${errorText(error)}`);
    } finally {
      setResuming(false);
    }
  };

  const stop = async (): Promise<void> => {
    if (!running || stopping) return;
    setStopping(true);
    try {
      await cancelTurn(name, chosen);
    } catch (error) {
      setStopping(false);
      if (!(error instanceof ApiError && error.code === 'TURN_NOT_RUNNING')) setProblem(`could not stop the reply: ${errorText(error)}`);
    }
  };

  // Esc stops the reply, wherever the focus is on this page.
  useEffect(() => {
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === 'Escape' && running) {
        event.preventDefault();
        void stop();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [running, stopping]);

  const reset = async (): Promise<void> => {
    setConfirmReset(false);
    try {
      await resetSession(name, chosen);
      setLive(undefined);
      setRefused([]);
      session.reload();
    } catch (error) {
      setProblem(`could not reset the session: ${errorText(error)}`);
    }
  };

  const refusedAfter = (count: number) =>
    refused
      .filter((refusal) => refusal.after === count || (count === history.length && refusal.after > count))
      .map((refusal) => (
        <RefusedTurn
          key={`refused-${refusal.id}`}
          refusal={refusal}
          agent={agent.data}
          busy={resuming || running}
          onResume={() => void resume()}
          onRetry={() => retry(refusal)}
        />
      ));
  return (
    <div class="page chat-page">
      <PageHeader
        title={
          <span class="title-with-badge">
            Chat with {name} {agent.data === undefined ? null : <AgentStateBadge agent={agent.data} />}
          </span>
        }
        subtitle={
          <span>
            <a href={href.agents}>Agents</a> / <a href={href.agent(name)}>{name}</a> / chat
          </span>
        }
        actions={
          confirmReset ? (
            <span class="reset-confirm">
              Empty the session of {name}?{' '}
              <button type="button" class="btn btn-small btn-danger-ghost" onClick={() => void reset()}>
                Reset
              </button>
              <button type="button" class="btn btn-small" onClick={() => setConfirmReset(false)}>
                Keep it
              </button>
            </span>
          ) : (
            <button type="button" class="btn btn-small" disabled={running || history.length === 0} onClick={() => setConfirmReset(true)}>
              Reset session
            </button>
          )
        }
      />
      {sessions.data === undefined || sessions.data.length === 0 ? null : (
        <SessionPicker
          sessions={sessions.data}
          ownId={ownId}
          chosen={chosen}
          disabled={running}
          onChoose={(id) => {
            setRefused([]);
            setChosen(id);
          }}
        />
      )}
      <ErrorBox message={agent.error ?? session.error} />
      {agent.data === undefined ? null : <CannotRunNotice agent={agent.data} />}
      <div class="chat-log" aria-live="polite" data-testid="chat-log">
        {history.length === 0 && live === undefined && refused.length === 0 ? (
          <div class="empty">Say something to {name}. The reply streams in as it is written; tool calls show as they happen.</div>
        ) : null}
        {refusedAfter(0)}
        {history.map((turn, index) => (
          <Fragment key={index}>
            <HistoryTurn turn={turn} />
            {refusedAfter(index + 1)}
          </Fragment>
        ))}
        {live === undefined ? null : <LiveTurnView turn={live} />}
        <div ref={bottom} />
      </div>
      <ErrorBox message={problem} />
      <form class="composer" onSubmit={send}>
        <textarea
          ref={input}
          aria-label="Message"
          placeholder={`Message ${name}… (Enter to send, Shift+Enter for a new line, Esc to stop a reply)`}
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
        {running ? (
          <button
            type="button"
            class="btn btn-danger-ghost"
            disabled={stopping}
            onClick={() => void stop()}
            title="Stop the reply (Esc); what it said so far is kept"
          >
            {stopping ? 'Stopping…' : 'Stop'}
          </button>
        ) : (
          <button type="submit" class="btn btn-primary" disabled={draft.trim() === ''}>
            Send
          </button>
        )}
      </form>
    </div>
  );
}
