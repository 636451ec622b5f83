import { useState } from 'preact/hooks';

/** One field of a question's form, as MCP's form elicitation describes it (a flat object schema). */
interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  oneOf?: { const?: unknown; title?: string }[];
  items?: { enum?: unknown[]; anyOf?: { const?: unknown; title?: string }[] };
}

/** A question an MCP server asks a person: its message and the schema of the answer. */
export interface Question {
  message: string;
  requestedSchema: { properties?: Record<string, FieldSchema>; required?: string[] };
}

/** Whether an approval's input is a question (an MCP server's elicitation) rather than a tool call's input. */
export function questionOf(input: unknown): Question | undefined {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const fields: { message?: unknown; requestedSchema?: unknown } = input;
  const { message, requestedSchema } = fields;
  if (typeof message !== 'string' || requestedSchema === null || typeof requestedSchema !== 'object') return undefined;
  const schema: Question['requestedSchema'] = requestedSchema;
  return { message, requestedSchema: schema };
}

/** The choices of a single- or multi-select field: value and label. */
function choicesOf(field: FieldSchema): { value: string; label: string }[] | undefined {
  const titled = field.oneOf ?? field.items?.anyOf;
  if (titled !== undefined) return titled.map((choice) => ({ value: String(choice.const), label: choice.title ?? String(choice.const) }));
  const plain = field.enum ?? field.items?.enum;
  return plain?.map((value) => ({ value: String(value), label: String(value) }));
}

/** A field's value as an input shows it. */
function shown(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

/** The starting answer: each field's default, where it has one. */
function defaultsOf(question: Question): Record<string, unknown> {
  const answer: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(question.requestedSchema.properties ?? {})) if (field.default !== undefined) answer[key] = field.default;
  return answer;
}

/**
 * A form for a question's fields (text, numbers, yes/no, one or several choices), each labelled
 * with its title and described; the daemon checks the answer against the schema and says what is
 * wrong. `onAnswer` gets the fields filled in.
 */
export function QuestionForm({ question, busy, onAnswer }: { question: Question; busy: boolean; onAnswer: (answer: Record<string, unknown>) => void }) {
  const [answer, setAnswer] = useState<Record<string, unknown>>(() => defaultsOf(question));
  const required = new Set(question.requestedSchema.required ?? []);
  const set = (key: string, value: unknown): void => setAnswer((current) => ({ ...current, [key]: value }));
  return (
    <form
      class="question-form"
      data-testid="question-form"
      onSubmit={(event) => {
        event.preventDefault();
        onAnswer(Object.fromEntries(Object.entries(answer).filter(([, value]) => value !== '' && value !== undefined)));
      }}
    >
      <p class="question-message">{question.message}</p>
      {Object.entries(question.requestedSchema.properties ?? {}).map(([key, field]) => {
        const id = `question-${key}`;
        const label = `${field.title ?? key}${required.has(key) ? ' (required)' : ''}`;
        const choices = choicesOf(field);
        let control;
        if (field.type === 'boolean') {
          control = (
            <input id={id} type="checkbox" checked={answer[key] === true} disabled={busy} onChange={(event) => set(key, event.currentTarget.checked)} />
          );
        } else if (field.type === 'array' && choices !== undefined) {
          const chosen = Array.isArray(answer[key]) ? (answer[key] as unknown[]).map(String) : [];
          control = (
            <select
              id={id}
              multiple
              disabled={busy}
              onChange={(event) =>
                set(
                  key,
                  Array.from(event.currentTarget.selectedOptions, (option) => option.value),
                )
              }
            >
              {choices.map((choice) => (
                <option key={choice.value} value={choice.value} selected={chosen.includes(choice.value)}>
                  {choice.label}
                </option>
              ))}
            </select>
          );
        } else if (choices !== undefined) {
          control = (
            <select id={id} value={shown(answer[key])} disabled={busy} onChange={(event) => set(key, event.currentTarget.value)}>
              <option value="">—</option>
              {choices.map((choice) => (
                <option key={choice.value} value={choice.value}>
                  {choice.label}
                </option>
              ))}
            </select>
          );
        } else if (field.type === 'number' || field.type === 'integer') {
          control = (
            <input
              id={id}
              type="number"
              step={field.type === 'integer' ? 1 : 'any'}
              value={shown(answer[key])}
              disabled={busy}
              onInput={(event) => set(key, event.currentTarget.value === '' ? undefined : Number(event.currentTarget.value))}
            />
          );
        } else {
          control = (
            <input
              id={id}
              type="text"
              value={typeof answer[key] === 'string' ? answer[key] : ''}
              disabled={busy}
              onInput={(event) => set(key, event.currentTarget.value)}
            />
          );
        }
        return (
          <div class="question-field" key={key}>
            <label for={id}>{label}</label>
            {control}
            {field.description === undefined ? null : <span class="small muted">{field.description}</span>}
          </div>
        );
      })}
      <button type="submit" class="btn btn-primary" disabled={busy}>
        Answer
      </button>
    </form>
  );
}
