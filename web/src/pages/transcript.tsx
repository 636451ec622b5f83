import type { TranscriptItem } from '../session.ts';

export function compactJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? '' : text;
}

/** One tool call line: `⚙ name(input)`. */
export function ToolCallLine({ toolName, input }: { toolName: string; input: unknown }) {
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

/** One tool result line, red when the tool failed. */
export function ToolResultLine({ toolName, text, isError }: { toolName: string; text: string; isError: boolean }) {
  const shown = text.length > 400 ? `${text.slice(0, 400)}…` : text;
  return (
    <div class={isError ? 'tool-line tool-result error' : 'tool-line tool-result'} data-testid="tool-result">
      <span class="tool-icon">{isError ? '✗' : '↳'}</span>
      <span class="mono">
        <span class="muted">{toolName}: </span>
        {shown}
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
            return (
              <div key={index} class={`bubble bubble-${item.role === 'user' ? 'user' : 'agent'}`}>
                <div class="bubble-role">{item.role === 'user' ? 'You' : item.role === 'assistant' ? 'Agent' : item.role}</div>
                <div class="bubble-text">{item.text}</div>
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
