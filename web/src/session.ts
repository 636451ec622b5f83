/** One item of a stored session, flattened for display. */
export type TranscriptItem =
  | { kind: 'text'; role: string; text: string }
  | { kind: 'tool-call'; toolName: string; input: unknown }
  | { kind: 'tool-result'; toolName: string; text: string; isError: boolean };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (isRecord(output) && 'value' in output) return typeof output['value'] === 'string' ? output['value'] : JSON.stringify(output['value']);
  return JSON.stringify(output);
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
      const toolName = typeof part['toolName'] === 'string' ? part['toolName'] : 'tool';
      if (type === 'text' && typeof part['text'] === 'string' && part['text'] !== '') items.push({ kind: 'text', role, text: part['text'] });
      else if (type === 'tool-call') items.push({ kind: 'tool-call', toolName, input: part['input'] ?? part['args'] });
      else if (type === 'tool-result') {
        const output = part['output'];
        const isError = isRecord(output) && typeof output['type'] === 'string' && output['type'].startsWith('error');
        items.push({ kind: 'tool-result', toolName, text: outputText(output ?? part['result']), isError });
      }
    }
  }
  return items;
}
