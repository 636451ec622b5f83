/** One item of a stored session, flattened for display. */
export type TranscriptItem =
  | { kind: 'text'; role: string; text: string }
  | { kind: 'tool-call'; toolName: string; input: unknown }
  | { kind: 'tool-result'; toolName: string; text: string; isError: boolean };

/** Whether a value read from a session is an object with keys (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A tool result's output as text: a string as it is, anything else as JSON (`indent` spaces deep, or on one line). */
export function outputText(output: unknown, indent?: number): string {
  if (typeof output === 'string') return output;
  if (isRecord(output) && 'value' in output) return typeof output['value'] === 'string' ? output['value'] : JSON.stringify(output['value'], null, indent);
  return JSON.stringify(output, null, indent);
}

/** The tool a tool-call or tool-result part names (`tool` when it names none). */
export function toolNameOf(part: Record<string, unknown>): string {
  return typeof part['toolName'] === 'string' ? part['toolName'] : 'tool';
}

/** Whether a tool-result part's output is an error (`error-text`, `error-json`). */
export function isErrorOutput(output: unknown): boolean {
  return isRecord(output) && typeof output['type'] === 'string' && output['type'].startsWith('error');
}

/** Flattens the session's model messages (AI SDK shape: role + string or parts) into transcript items. */
export function toTranscript(messages: readonly unknown[]): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  for (const message of messages) {
    if (!isRecord(message)) continue;
    const role = typeof message['role'] === 'string' ? message['role'] : 'unknown';
    const content = message['content'];
    if (typeof content === 'string') {
      if (content !== '') items.push({ kind: 'text', role, text: content });
      continue;
    }
    if (!Array.isArray(content)) continue;
    for (const part of content as unknown[]) {
      if (!isRecord(part)) continue;
      const type = part['type'];
      const toolName = toolNameOf(part);
      if (type === 'text' && typeof part['text'] === 'string' && part['text'] !== '') items.push({ kind: 'text', role, text: part['text'] });
      else if (type === 'tool-call') items.push({ kind: 'tool-call', toolName, input: part['input'] ?? part['args'] });
      else if (type === 'tool-result') {
        const output = part['output'];
        items.push({ kind: 'tool-result', toolName, text: outputText(output ?? part['result']), isError: isErrorOutput(output) });
      }
    }
  }
  return items;
}
