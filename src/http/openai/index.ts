/** The OpenAI-compatible API (`/v1/models`, `/v1/chat/completions`): an agent is a model. */
export { ChatCompletionRequestSchema, lastUserMessage } from './chat-completion-request.ts';
export type { ChatCompletionRequest } from './chat-completion-request.ts';
export { createOpenAiRoutes } from './openai-routes.ts';
export type { ChatCompletion, ChatCompletionChunk, OpenAiModel, OpenAiRoutesOptions, OpenAiUsage } from './openai-routes.ts';
export { toOpenAiErrorResponse } from './to-openai-error-response.ts';
export type { OpenAiErrorBody, OpenAiErrorResponse } from './to-openai-error-response.ts';
