import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/**
 * A model that answered with nothing: no text and no tool call, though it was neither cut off by
 * its length limit nor by a content filter. Local servers do this when a conversation is longer
 * than the context they loaded the model with, or when the model cannot use the tools it was given.
 */
export class EmptyModelReplyError extends LoomError {
  /** `model` is `provider/model`; `finishReason` is the server's own word for why it stopped. */
  constructor(model: string, finishReason: string | undefined, outputTokens: number | undefined, options?: LoomErrorOptions) {
    const why = `finish reason ${finishReason === undefined ? 'not given' : `"${finishReason}"`}${outputTokens === undefined ? '' : `, ${outputTokens} output tokens`}`;
    super(
      'MODEL_EMPTY_REPLY',
      'third-party',
      `model "${model}" sent an empty reply (no text and no tool call; ${why}): a local server does this when the conversation is longer than the context it loaded the model with (raise it, e.g. Ollama's num_ctx or vLLM's --max-model-len) or when the model cannot call tools (choose one that can)`,
      { ...options, details: { model, finishReason: finishReason ?? null, outputTokens: outputTokens ?? null, ...options?.details } },
    );
  }
}
