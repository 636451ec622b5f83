import type { ComponentChildren } from 'preact';
import type { ChatItem } from '../chat-history.ts';
import type { TraceStep, TurnRecord } from '../chat-types.ts';
import { formatCached, formatCost, formatTokens } from '../format.ts';
import { Markdown } from '../markdown.tsx';
import type { TranscriptItem } from '../session.ts';
import '../chat.css';

export function compactJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? '' : text;
}

function prettyJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, null, 2) ?? '';
}

/** A duration as people read it: `850 ms`, `1.5 s`, `2 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** The summary line's short form of a tool input. */
function shortInput(input: unknown): string {
  const text = compactJson(input);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** A tool call that waits for (or was given) a person's approval: its name and input, then what `children` add (the decision, buttons). */
export function ApprovalHeader({ toolName, input, children }: { toolName: string; input: string; children: ComponentChildren }) {
  return (
    <div class="approval-line" data-testid="approval-request">
      <span class="tool-icon" aria-hidden="true">
        ⏸
      </span>
      <span class="mono">
        <strong>{toolName}</strong>
        <span class="muted">({input})</span>
      </span>
      {children}
    </div>
  );
}

/**
 * One tool call: its name, input and status (and duration once known) on a line that expands to
 * the full input and the full output.
 */
export function ToolCallView({ item, running = false }: { item: Extract<ChatItem, { kind: 'tool' }>; running?: boolean }) {
  const done = item.output !== undefined;
  const status = !done ? (running ? 'running' : 'no result') : item.isError ? 'error' : 'done';
  return (
    <>
      {item.approval === undefined ? null : (
        <ApprovalHeader toolName={item.toolName} input={shortInput(item.input)}>
          <span class="approval-status">{item.approval}</span>
        </ApprovalHeader>
      )}
      <details class={`tool-call-view${item.isError ? ' tool-error' : ''}`} data-testid="tool-call">
        {/* Once the call has its result, the summary is the result's line (red when it failed). */}
        <summary {...(done ? { 'data-testid': 'tool-result', class: item.isError ? 'error' : 'ok' } : {})}>
          <span class="tool-icon" aria-hidden="true">
            ⚙
          </span>
          <span class="mono tool-signature">
            <strong>{item.toolName}</strong>
            <span class="muted">({shortInput(item.input)})</span>
          </span>
          <span class={`tool-status tool-status-${status.replace(' ', '-')}`}>
            {status === 'running' ? <span class="spinner" aria-hidden="true" /> : null}
            {status}
          </span>
          {item.durationMs === undefined ? null : (
            <span class="tool-duration" data-testid="tool-duration">
              {formatDuration(item.durationMs)}
            </span>
          )}
        </summary>
        <div class="tool-body">
          <div class="tool-label">Input</div>
          <pre class="tool-pre" data-testid="tool-input" tabIndex={0} aria-label={`Input of ${item.toolName}`}>
            {prettyJson(item.input)}
          </pre>
          <div class="tool-label">{item.isError ? 'Error' : 'Output'}</div>
          <pre class="tool-pre" data-testid="tool-output" tabIndex={0} aria-label={`${item.isError ? 'Error' : 'Output'} of ${item.toolName}`}>
            {item.output ?? (running ? 'still running…' : 'no result was recorded')}
          </pre>
        </div>
      </details>
    </>
  );
}

function stepLine(step: TraceStep) {
  if (step.kind === 'model') {
    return (
      <li class="trace-step trace-model" data-testid="trace-model">
        <span class="trace-kind">model</span>
        <span class="mono">{step.model}</span>
        <span>
          {formatTokens(step.inputTokens)} in{formatCached(step.cacheReadTokens, step.cacheWriteTokens)} · {formatTokens(step.outputTokens)} out ·{' '}
          {formatCost(step.costUsd)}
        </span>
        <span class="trace-time">{formatDuration(step.latencyMs)}</span>
      </li>
    );
  }
  return (
    <li class={`trace-step trace-tool${step.isError ? ' tool-error' : ''}`} data-testid="trace-tool">
      <span class="trace-kind">tool</span>
      <span class="mono">{step.toolName}</span>
      <span>{step.isError ? 'error' : 'done'}</span>
      <span class="trace-time">{formatDuration(step.durationMs)}</span>
    </li>
  );
}

/** A turn's trace: its model calls (tokens, cost, latency) and tool calls (duration), in order. */
export function TraceView({ record }: { record: TurnRecord }) {
  const models = record.steps.filter((step) => step.kind === 'model').length;
  const tools = record.steps.length - models;
  return (
    <details class="trace" data-testid="turn-trace">
      <summary>
        Trace · {models} model call{models === 1 ? '' : 's'} · {tools} tool call{tools === 1 ? '' : 's'} ·{' '}
        {formatDuration(record.finishedAt - record.startedAt)}
      </summary>
      {record.steps.length === 0 ? <p class="muted small">No model or tool was called.</p> : <ol class="trace-steps">{record.steps.map(stepLine)}</ol>}
    </details>
  );
}

/** One tool call line: `⚙ name(input)`. */
function ToolCallLine({ toolName, input }: { toolName: string; input: unknown }) {
  return (
    <div class="tool-line tool-call" data-testid="tool-call">
      <span class="tool-icon">⚙</span>
      <span class="mono">
        <strong>{toolName}</strong>
        <span class="muted">({compactJson(input)})</span>
      </span>
    </div>
  );
}

/** One tool result line, red when the tool failed; a long result shows its start and expands to the whole. */
function ToolResultLine({ toolName, text, isError }: { toolName: string; text: string; isError: boolean }) {
  const long = text.length > 400;
  return (
    <div class={isError ? 'tool-line tool-result error' : 'tool-line tool-result'} data-testid="tool-result">
      <span class="tool-icon">{isError ? '✗' : '↳'}</span>
      <span class="mono">
        <span class="muted">{toolName}: </span>
        {long ? (
          <details class="tool-more">
            <summary>{`${text.slice(0, 400)}…`}</summary>
            <pre class="tool-pre" tabIndex={0} aria-label={`Result of ${toolName}`}>
              {text}
            </pre>
          </details>
        ) : (
          text
        )}
      </span>
    </div>
  );
}

/** A stored session, as chat bubbles with tool lines between. */
export function Transcript({ items }: { items: readonly TranscriptItem[] }) {
  return (
    <div class="transcript">
      {items.map((item, index) => {
        switch (item.kind) {
          case 'text':
            // As the chat shows them: what the agent wrote as Markdown (rendered safely), the person's words as typed.
            return (
              <div
                key={index}
                class={`bubble bubble-${item.role === 'user' ? 'user' : 'agent'}`}
                data-testid={item.role === 'assistant' ? 'history-reply' : 'history-message'}
              >
                <div class="bubble-role">{item.role === 'user' ? 'You' : item.role === 'assistant' ? 'Agent' : item.role}</div>
                {item.role === 'assistant' ? <Markdown text={item.text} class="bubble-markdown" /> : <div class="bubble-text">{item.text}</div>}
              </div>
            );
          case 'tool-call':
            return <ToolCallLine key={index} toolName={item.toolName} input={item.input} />;
          case 'tool-result':
            return <ToolResultLine key={index} toolName={item.toolName} text={item.text} isError={item.isError} />;
        }
      })}
    </div>
  );
}
