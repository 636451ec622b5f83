import type { ModelMessage } from 'ai';
import type { z } from 'zod';
import type { Clock } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { ModelResolver, ModelTarget } from '../models/index.ts';
import type { ModelCallUsage } from './agent-loop.ts';
import { SUMMARY_INSTRUCTION } from './compaction.ts';
import { loadAi } from './load-ai.ts';

/**
 * Single model calls outside the agent loop (a history's summary, an agent type's own steps, a
 * tool's `generate_text` or judge): the kernel asks for one here and is told what it spent, so
 * that the AI SDK is called from the runtime only.
 */

/** How one model call is made, and where its usage goes. */
export interface ModelCallSettings {
  /** What the call resolves its model through (the kernel's is metered by its budget ledger). */
  resolver: ModelResolver;
  model: ModelTarget;
  clock: Clock;
  signal: AbortSignal;
  /** Receives the call's usage as it answers (and what a reply that was not the JSON asked for spent). */
  onCall: (call: ModelCallUsage) => void;
  maxOutputTokens?: number;
  temperature?: number;
}

/** What one model call sends. */
export interface ModelCallPrompt {
  system: string;
  messages: ModelMessage[];
}

type Ai = Awaited<ReturnType<typeof loadAi>>;
type Output = Parameters<Ai['generateText']>[0]['output'];

/** One call, without retries (the resolver's fallback chain retries), its usage handed on. */
async function generate(settings: ModelCallSettings, prompt: ModelCallPrompt, output?: Output): Promise<Awaited<ReturnType<Ai['generateText']>>> {
  const { generateText } = await loadAi();
  const { model, clock } = settings;
  const startedAt = clock.now();
  const result = await generateText({
    model: settings.resolver.resolve(model),
    system: prompt.system,
    messages: prompt.messages,
    ...(settings.maxOutputTokens === undefined ? {} : { maxOutputTokens: settings.maxOutputTokens }),
    ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
    maxRetries: 0,
    abortSignal: settings.signal,
    ...(output === undefined ? {} : { output }),
  });
  settings.onCall({
    model,
    inputTokens: result.usage.inputTokens ?? 0,
    outputTokens: result.usage.outputTokens ?? 0,
    startedAt,
    latencyMs: clock.now() - startedAt,
  });
  return result;
}

/** The text of one model call. */
export async function generateReply(settings: ModelCallSettings, prompt: ModelCallPrompt): Promise<string> {
  return (await generate(settings, prompt)).text;
}

/** A summary of `older` (a history's leading messages) by the model, paid for like any other call. */
export async function summarizeMessages(settings: ModelCallSettings, older: readonly ModelMessage[]): Promise<string> {
  return generateReply(settings, { system: SUMMARY_INSTRUCTION, messages: [...older, { role: 'user', content: SUMMARY_INSTRUCTION }] });
}

/**
 * A reply as JSON matching `schema`: asked twice at most, the second time told what was wrong
 * with the first. `label` names the call in the error (`agent "a", step "plan"`).
 * @throws {LoomError} `STRUCTURED_OUTPUT_INVALID` when neither reply was the JSON asked for.
 */
export async function generateStructured<T>(settings: ModelCallSettings, prompt: ModelCallPrompt, schema: z.ZodType<T>, label: string): Promise<T> {
  const { NoObjectGeneratedError, NoOutputGeneratedError, Output } = await loadAi();
  let messages = prompt.messages;
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let reply: string;
    try {
      const result = await generate(settings, { system: prompt.system, messages }, Output.object({ schema }));
      // A reply that calls a tool (none is offered here; a model may call one all the same), or
      // ends another way than "stop" with no text (a length limit, a content filter), has no output.
      if (result.toolCalls.length > 0) {
        problem = `the reply called ${result.toolCalls.map((toolCall) => toolCall.toolName).join(', ')}, and this step offers no tool`;
      } else {
        try {
          return result.output as T;
        } catch (error) {
          if (!NoOutputGeneratedError.isInstance(error)) throw error;
          problem = `the reply ended (${result.finishReason}) with no output`;
        }
      }
      reply = result.text;
    } catch (error) {
      if (!NoObjectGeneratedError.isInstance(error)) throw error;
      settings.onCall({ model: settings.model, inputTokens: error.usage?.inputTokens ?? 0, outputTokens: error.usage?.outputTokens ?? 0 });
      problem = error.cause instanceof Error ? error.cause.message : error.message;
      reply = error.text ?? '';
    }
    const said: ModelMessage[] = reply.trim() === '' ? [] : [{ role: 'assistant', content: reply }];
    messages = [...prompt.messages, ...said, { role: 'user', content: `That reply is not the JSON asked for (${problem}). Answer again with JSON only.` }];
  }
  throw new LoomError('STRUCTURED_OUTPUT_INVALID', 'third-party', `${label}: the model's reply was not the JSON asked for, twice: ${problem}`);
}
