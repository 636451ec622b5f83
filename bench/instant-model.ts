import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider';

const usage: LanguageModelV4Usage = {
  inputTokens: { total: 20, noCache: 20, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** Whether the prompt's last message is a tool result (so the model should now answer in text). */
function afterToolResult(options: LanguageModelV4CallOptions): boolean {
  return options.prompt.at(-1)?.role === 'tool';
}

/**
 * An in-process model that answers at once, for measuring Loom's own overhead per turn. With
 * `toolName` set it first calls that tool (with `toolInput`), then answers once it has the result;
 * with `json`, calls that ask for JSON get what it returns; `onCall` sees each call's options (what
 * the model was asked).
 */
export function createInstantModel(
  options: {
    toolName?: string;
    toolInput?: Record<string, unknown>;
    json?: (callOptions: LanguageModelV4CallOptions) => unknown;
    onCall?: (callOptions: LanguageModelV4CallOptions) => void;
  } = {},
): LanguageModelV4 {
  let calls = 0;
  const content = (callOptions: LanguageModelV4CallOptions): LanguageModelV4Content[] => {
    calls += 1;
    options.onCall?.(callOptions);
    // A structured step (the call asks for JSON): the JSON `json` gives.
    if (options.json !== undefined && callOptions.responseFormat?.type === 'json') return [{ type: 'text', text: JSON.stringify(options.json(callOptions)) }];
    if (options.toolName !== undefined && !afterToolResult(callOptions)) {
      return [{ type: 'tool-call', toolCallId: `call-${calls}`, toolName: options.toolName, input: JSON.stringify(options.toolInput ?? {}) }];
    }
    return [{ type: 'text', text: 'ok' }];
  };
  const finishReason = (parts: LanguageModelV4Content[]) =>
    parts[0]?.type === 'tool-call' ? ({ unified: 'tool-calls', raw: 'tool_calls' } as const) : ({ unified: 'stop', raw: 'stop' } as const);
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'instant',
    supportedUrls: {},
    doGenerate: (callOptions) => {
      const parts = content(callOptions);
      return Promise.resolve({ content: parts, finishReason: finishReason(parts), usage, warnings: [] });
    },
    doStream: (callOptions) => {
      const parts = content(callOptions);
      const streamParts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      for (const part of parts) {
        if (part.type === 'text')
          streamParts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: part.text }, { type: 'text-end', id: 't' });
        else if (part.type === 'tool-call') streamParts.push(part);
      }
      streamParts.push({ type: 'finish', finishReason: finishReason(parts), usage });
      return Promise.resolve({
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          start(controller) {
            for (const part of streamParts) controller.enqueue(part);
            controller.close();
          },
        }),
      });
    },
  };
}
