/**
 * The SSE frame of one OpenAI chat-completion chunk that streams `text` and does not finish: what
 * a test's hand-made model server writes before it hangs or drops the connection.
 */
export function openAiTextChunkFrame(text: string): string {
  const chunk = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'gpt-4o',
    choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}
