import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4Middleware,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { EmptyModelReplyError } from './errors/empty-model-reply-error.ts';
import { firstMarker, parseTextToolCalls, TOOL_CALL_MARKERS, type TextToolCall } from './text-tool-calls.ts';
import { wholeCallReader } from './whole-call-reader.ts';

/** The names of the function tools a call offers. */
function offeredTools(params: LanguageModelV4CallOptions): Set<string> {
  return new Set((params.tools ?? []).filter((tool) => tool.type === 'function').map((tool) => tool.name));
}

/** A fresh tool call id, in the shape OpenAI-compatible servers give theirs. */
function callId(): string {
  return `call_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
}

function toolCallParts(calls: readonly TextToolCall[]): Extract<LanguageModelV4Content, { type: 'tool-call' }>[] {
  return calls.map((call) => ({ type: 'tool-call', toolCallId: callId(), toolName: call.toolName, input: JSON.stringify(call.input) }));
}

/** A reply that is neither cut short (length, content filter, error) may not be empty. */
function mayNotBeEmpty(finishReason: LanguageModelV4FinishReason): boolean {
  return finishReason.unified !== 'length' && finishReason.unified !== 'content-filter' && finishReason.unified !== 'error';
}

/** How much of `held` (text not yet passed on) may still turn out to be a marked tool call, and so is kept back. */
function heldBack(held: string): number {
  const marker = firstMarker(held);
  if (marker !== -1) return held.length - marker;
  // The end of the text may be the start of a marker.
  for (let length = Math.min(held.length, Math.max(...TOOL_CALL_MARKERS.map((each) => each.length)) - 1); length > 0; length--) {
    const tail = held.slice(-length);
    if (TOOL_CALL_MARKERS.some((each) => each.startsWith(tail))) return length;
  }
  return 0;
}

/**
 * What a model served by Ollama, vLLM, LM Studio or llama.cpp needs around it: tool calls it
 * wrote as text (see {@link parseTextToolCalls}) become real tool calls (and the reply's finish
 * reason `tool-calls`), and a reply with no text and no tool call becomes an
 * {@link EmptyModelReplyError} naming `model` (thrown, or the stream's `error` part) instead of an
 * empty answer. Streamed text is passed on as it comes, except what may still be a call: a reply
 * that opens with JSON or a fence is held while it may still be one call written whole (see
 * {@link wholeCallReader}), and whatever follows a tool-call marker to the end of the text; what
 * is no call after all is passed on as text.
 */
export function localModelMiddleware(model: string): LanguageModelV4Middleware {
  return {
    specificationVersion: 'v4',
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const textParts = result.content.filter((part) => part.type === 'text');
      const hasCalls = result.content.some((part) => part.type === 'tool-call');
      const text = textParts.map((part) => part.text).join('');
      const parsed = hasCalls ? undefined : parseTextToolCalls(text, offeredTools(params));
      if (parsed !== undefined) {
        const rest = result.content.filter((part) => part.type !== 'text');
        return {
          ...result,
          content: [...rest, ...(parsed.text === '' ? [] : [{ type: 'text' as const, text: parsed.text }]), ...toolCallParts(parsed.calls)],
          finishReason: { unified: 'tool-calls', raw: result.finishReason.raw },
        };
      }
      if (!hasCalls && text.trim() === '' && mayNotBeEmpty(result.finishReason)) {
        throw new EmptyModelReplyError(model, result.finishReason.raw ?? result.finishReason.unified, result.usage.outputTokens.total);
      }
      return result;
    },
    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      const tools = offeredTools(params);
      let held = '';
      let said = '';
      let started: string | undefined;
      let textStart: LanguageModelV4StreamPart | undefined;
      let sawCall = false;
      let madeCalls = false;
      // Reads the text block so far as one call written whole, while nothing of it was passed on.
      let whole: ((text: string) => boolean) | undefined = wholeCallReader(tools);
      const pass = (controller: TransformStreamDefaultController<LanguageModelV4StreamPart>, id: string, delta: string): void => {
        if (delta === '') return;
        if (started !== id && textStart !== undefined) {
          controller.enqueue(textStart);
          started = id;
        }
        said += delta;
        controller.enqueue({ type: 'text-delta', id, delta });
      };
      const repaired = stream.pipeThrough(
        new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
          transform(part, controller) {
            switch (part.type) {
              case 'text-start':
                // Passed on with the first text that is no call, so a reply that is only a call has no empty text.
                textStart = part;
                return;
              case 'text-delta': {
                if (tools.size === 0) {
                  pass(controller, part.id, part.delta);
                  return;
                }
                held += part.delta;
                if (whole !== undefined && said.trim() === '' && whole(held)) return;
                whole = undefined;
                const keep = heldBack(held);
                pass(controller, part.id, held.slice(0, held.length - keep));
                held = held.slice(held.length - keep);
                return;
              }
              case 'text-end': {
                const parsed = sawCall ? undefined : parseTextToolCalls(held, tools);
                pass(controller, part.id, parsed === undefined ? held : parsed.text);
                held = '';
                whole = wholeCallReader(tools);
                if (started === part.id) controller.enqueue(part);
                if (parsed !== undefined) {
                  for (const call of toolCallParts(parsed.calls)) controller.enqueue(call);
                  madeCalls = true;
                }
                return;
              }
              case 'tool-input-start':
              case 'tool-call':
                sawCall = true;
                controller.enqueue(part);
                return;
              case 'finish':
                if (madeCalls) {
                  controller.enqueue({ ...part, finishReason: { unified: 'tool-calls', raw: part.finishReason.raw } });
                  return;
                }
                if (!sawCall && said.trim() === '' && mayNotBeEmpty(part.finishReason)) {
                  controller.enqueue({
                    type: 'error',
                    error: new EmptyModelReplyError(model, part.finishReason.raw ?? part.finishReason.unified, part.usage.outputTokens.total),
                  });
                }
                controller.enqueue(part);
                return;
              default:
                controller.enqueue(part);
            }
          },
        }),
      );
      return { ...rest, stream: repaired };
    },
  };
}
