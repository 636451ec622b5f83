import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { errorText } from '../format.ts';
import type { AgentDetailView } from '../types.ts';

/** A manifest to start from: a chat agent with memory of its own. */
export const MANIFEST_TEMPLATE = `name = "my-agent"
description = "What this agent is for"

[model]
provider = "openai"
model = "gpt-4o-mini"

[capabilities]
tools = ["memory_store", "memory_recall"]
memory_read = ["self.*"]
memory_write = ["self.*"]
`;

/**
 * The line of the TOML `text` a validation message points at, for highlighting. Messages name
 * the field as `[section].field: …` or `field: …`; a missing field points at its section.
 */
export function lineNamedBy(message: string, text: string): number | undefined {
  const match = /(?:^|: )(?:\[([\w.]+)\]\.)?([A-Za-z_][\w]*)(?:\[\d+\])?: /.exec(message);
  if (match === null) return undefined;
  const [, section, field] = match;
  const lines = text.split('\n');
  let from = 0;
  let to = lines.length;
  if (section !== undefined) {
    const header = lines.findIndex((line) => line.trim() === `[${section}]`);
    if (header === -1) return undefined;
    from = header;
    const next = lines.findIndex((line, index) => index > header && /^\s*\[/.test(line));
    to = next === -1 ? lines.length : next;
  }
  for (let index = from; index < to; index += 1) {
    if (new RegExp(`^\\s*${field ?? ''}\\s*=`).test(lines[index] ?? '')) return index + 1;
  }
  return section === undefined ? undefined : from + 1;
}

export function ManifestEditor({ onSpawned, onCancel }: { onSpawned: (agent: AgentDetailView & { warnings: string[] }) => void; onCancel: () => void }) {
  const [text, setText] = useState(MANIFEST_TEMPLATE);
  const [format, setFormat] = useState<'toml' | 'json'>('toml');
  const [error, setError] = useState<{ code: string; message: string; line: number | undefined } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const agent = await api<AgentDetailView & { warnings: string[] }>('/api/agents', { method: 'POST', body: text, contentType: format === 'toml' ? 'application/toml' : 'application/json' });
      onSpawned(agent);
    } catch (cause) {
      const code = cause instanceof ApiError ? cause.code : 'ERROR';
      const message = errorText(cause);
      setError({ code, message, line: lineNamedBy(message, text) });
    } finally {
      setBusy(false);
    }
  };

  const lineCount = text.split('\n').length;
  return (
    <form class="card editor" onSubmit={(event) => void submit(event)} aria-label="Spawn an agent">
      <div class="card-head">
        <h2>Spawn an agent</h2>
        <div class="segmented" role="group" aria-label="Manifest format">
          <button type="button" class={format === 'toml' ? 'on' : ''} onClick={() => setFormat('toml')}>
            TOML
          </button>
          <button type="button" class={format === 'json' ? 'on' : ''} onClick={() => setFormat('json')}>
            JSON
          </button>
        </div>
      </div>
      <p class="hint">
        Write the agent's manifest. It is checked by the daemon; what is wrong shows below, naming the field.
      </p>
      <div class={error === undefined ? 'code-editor' : 'code-editor has-error'}>
        <div class="gutter" aria-hidden="true">
          {Array.from({ length: lineCount }, (_, index) => (
            <div class={error?.line === index + 1 ? 'gutter-line bad' : 'gutter-line'}>{index + 1}</div>
          ))}
        </div>
        <textarea
          name="manifest"
          aria-label="Manifest"
          spellcheck={false}
          rows={Math.max(14, lineCount + 1)}
          value={text}
          onInput={(event) => {
            setText(event.currentTarget.value);
            if (error !== undefined) setError({ ...error, line: undefined });
          }}
        />
      </div>
      {error === undefined ? null : (
        <div class="field-error" role="alert" data-testid="manifest-error">
          <strong>{error.code}</strong>
          {error.line === undefined ? null : <span class="muted"> · line {error.line}</span>}
          <div>{error.message}</div>
        </div>
      )}
      <div class="form-actions">
        <button type="button" class="btn btn-ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {busy ? 'Spawning…' : 'Spawn'}
        </button>
      </div>
    </form>
  );
}
