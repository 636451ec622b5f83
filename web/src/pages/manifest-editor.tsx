import { useEffect, useState } from 'preact/hooks';
import { API, ApiError, call, manifestBody, validateManifest } from '../api.ts';
import { Segmented } from '../components.tsx';
import { errorText } from '../format.ts';
import type { AnswerOf } from '../../../src/wire/index.ts';
import type { ManifestValidation } from '../types.ts';
import './manifest-editor.css';

/** A manifest to start from: a chat agent with memory of its own. */
export const MANIFEST_TEMPLATE = `name = "my-agent"
description = "What this agent is for"

# No provider or model: it runs on the daemon's default model ([default_model] in config.toml).
# To pin one, add e.g. provider = "anthropic" and model = "claude-sonnet-4-5" (needs ANTHROPIC_API_KEY).
[model]
max_tokens = 2048

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

/** How long the editor waits after the last keystroke before asking the daemon to check the text. */
export const VALIDATE_DELAY_MS = 400;

/** A spawned or updated agent as the API answers: the agent, with warnings about it. */
export type SavedAgent = AnswerOf<typeof API.spawnAgent>;

interface ManifestEditorProps {
  onCancel: () => void;
  /** Spawning: called with the new agent. */
  onSpawned?: (agent: SavedAgent) => void;
  /** Editing a live agent: its name (saved through `PUT /api/agents/{agent}`), and what to call once saved. */
  agent?: string;
  onSaved?: (agent: SavedAgent) => void;
  /** The text to start from (the template when spawning). */
  initialText?: string;
}

/** The warnings about a manifest (an agent that cannot run, say), one a line; nothing when there are none. */
export function WarningList({ warnings, label, testId }: { warnings: readonly string[]; label: string; testId: string }) {
  if (warnings.length === 0) return null;
  return (
    <ul class="manifest-warnings" data-testid={testId} aria-label={label}>
      {warnings.map((warning, index) => (
        <li key={index}>warning: {warning}</li>
      ))}
    </ul>
  );
}

/**
 * A manifest editor: the daemon checks the text as it is typed (debounced), and each error shows
 * at its line with the warnings a spawn would print; Spawn (or Save, for a live agent) sends it.
 */
export function ManifestEditor({ onSpawned, onCancel, agent, onSaved, initialText }: ManifestEditorProps) {
  const updating = agent !== undefined;
  const [text, setText] = useState(initialText ?? MANIFEST_TEMPLATE);
  const [format, setFormat] = useState<'toml' | 'json'>('toml');
  const [error, setError] = useState<{ code: string; message: string; line: number | undefined } | undefined>(undefined);
  const [check, setCheck] = useState<ManifestValidation | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const abort = new AbortController();
    const timer = setTimeout(() => {
      validateManifest(text, format, abort.signal).then(
        (answer) => setCheck(answer),
        // An older daemon without the route, or one that went away: the editor still spawns.
        () => {
          if (!abort.signal.aborted) setCheck(undefined);
        },
      );
    }, VALIDATE_DELAY_MS);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [text, format]);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      if (updating) onSaved?.(await call(API.updateAgent, { params: { agent }, text: manifestBody(text, format) }));
      else onSpawned?.(await call(API.spawnAgent, { text: manifestBody(text, format) }));
    } catch (cause) {
      const code = cause instanceof ApiError ? cause.code : 'ERROR';
      const message = errorText(cause);
      setError({ code, message, line: lineNamedBy(message, text) });
    } finally {
      setBusy(false);
    }
  };

  const lineCount = text.split('\n').length;
  // The live check marks its lines until a refused save says what the daemon said.
  const live = error === undefined ? (check?.errors ?? []) : [];
  const badLines = new Set<number>([
    ...live.map((issue) => issue.line).filter((line): line is number => line !== undefined),
    ...(error?.line === undefined ? [] : [error.line]),
  ]);
  const title = updating ? `Edit the manifest of ${agent}` : 'Spawn an agent';
  return (
    <form class="card editor" onSubmit={(event) => void submit(event)} aria-label={title}>
      <div class="card-head">
        <h2>{title}</h2>
        <Segmented
          label="Manifest format"
          value={format}
          options={[
            ['toml', 'TOML'],
            ['json', 'JSON'],
          ]}
          onChange={setFormat}
        />
      </div>
      <p class="hint">
        {updating
          ? 'Change the manifest and save: the agent keeps its id, session and memory. The name must stay the same.'
          : "Write the agent's manifest. It is checked by the daemon as you type; what is wrong shows at its line."}
      </p>
      <div class={badLines.size === 0 ? 'code-editor' : 'code-editor has-error'}>
        <div class="gutter" aria-hidden="true">
          {Array.from({ length: lineCount }, (_, index) => (
            <div class={badLines.has(index + 1) ? 'gutter-line bad' : 'gutter-line'} data-line={index + 1}>
              {index + 1}
            </div>
          ))}
        </div>
        <textarea
          name="manifest"
          aria-label="Manifest"
          aria-invalid={badLines.size > 0}
          spellcheck={false}
          rows={Math.max(14, lineCount + 1)}
          value={text}
          onInput={(event) => {
            setText(event.currentTarget.value);
            if (error !== undefined) setError(undefined);
          }}
        />
      </div>
      {live.length === 0 ? null : (
        <ul class="manifest-issues" data-testid="manifest-issues" aria-label="Problems in the manifest" aria-live="polite">
          {live.map((issue, index) => (
            <li key={index}>
              <span class="manifest-issue-line mono">{issue.line === undefined ? 'manifest' : `line ${issue.line}`}</span> {issue.message}
            </li>
          ))}
        </ul>
      )}
      {error === undefined ? null : (
        <div class="field-error" role="alert" data-testid="manifest-error">
          <strong>{error.code}</strong>
          {error.line === undefined ? null : <span class="muted"> · line {error.line}</span>}
          <div>{error.message}</div>
        </div>
      )}
      <WarningList warnings={check?.warnings ?? []} label="Warnings" testId="manifest-warnings" />
      <div class="form-actions">
        <button type="button" class="btn btn-ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {updating ? (busy ? 'Saving…' : 'Save') : busy ? 'Spawning…' : 'Spawn'}
        </button>
      </div>
    </form>
  );
}
