import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { LoomError } from '../errors/index.ts';
import { formatIssues, safeParseJson } from '../validation/index.ts';

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  name: string;
  input: Record<string, unknown>;
  /** The call's id; generated when left out. */
  id?: string;
}

/** Finish reasons in the AI SDK's words; mapped to each API's own. */
export type ScriptedFinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter';

/** The tokens a scripted reply reports. */
export interface ScriptedUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
}

/** A reply the scripted model gives. */
export interface ScriptedReply {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /**
   * Default `{ inputTokens: 10, outputTokens: 5 }`. `inputTokens` counts every input token;
   * `cacheReadTokens` and `cacheWriteTokens` (none by default) say how many of them the prompt
   * cache read and wrote: OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
   * `cache_read_input_tokens` and `cache_creation_input_tokens` (its `input_tokens` the rest).
   */
  usage?: ScriptedUsage;
  /** Default `tool-calls` when there are tool calls, else `stop`. */
  finishReason?: ScriptedFinishReason;
  /** The reply is held back until this settles (a model call that takes a while). */
  gate?: Promise<unknown>;
  /**
   * A streamed reply sends its text, then waits for this to settle before its tool calls and
   * its end (a reply stopped halfway, e.g. to cancel it). A reply returned whole waits before it is sent.
   */
  stall?: Promise<unknown>;
}

/** An HTTP error the scripted model answers with instead of a reply. */
export interface ScriptedError {
  status: number;
  headers?: Record<string, string>;
  /** The response body; defaults to the API's own error shape with a message naming the status. */
  body?: unknown;
}

/** One step of a script: a reply or an error. */
export type ScriptStep = ScriptedReply | ScriptedError;

/** A request the server received. */
export interface RecordedRequest {
  /** `openai` for `/v1/chat/completions`, `anthropic` for `/v1/messages`. */
  api: 'openai' | 'anthropic';
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body. */
  body: Record<string, unknown>;
}

/** A running scripted model server. */
export interface ScriptedModelServer {
  /** The base URL to give a provider, ending in `/v1` (e.g. `http://127.0.0.1:39211/v1`). */
  url: string;
  /** Appends steps to the script; each request takes the next step. */
  script(steps: ScriptStep[]): void;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Steps not yet used. */
  remaining(): number;
  /** Forgets unused steps and recorded requests, so one test's leftovers cannot leak into the next. */
  reset(): void;
  close(): Promise<void>;
}

const isError = (step: ScriptStep): step is ScriptedError => 'status' in step;

let idCounter = 0;
const nextId = (prefix: string): string => `${prefix}_${String(++idCounter).padStart(6, '0')}`;

/** Options of {@link startScriptedModelServer}. */
export interface ScriptedModelServerOptions {
  /** Where to listen: 127.0.0.1 by default. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** The script to start with (more can be added with `script`). */
  steps?: readonly ScriptStep[];
  /** Start the script over when it runs out, instead of answering 500. */
  loop?: boolean;
  /** Forget requests instead of keeping them all (a long-running `loom model serve`). */
  recordRequests?: boolean;
  /**
   * How long a streamed reply waits before each event after its first, in milliseconds: a pace of
   * 30 shows the text arriving word by word. 0 (the default) sends a reply at once.
   */
  paceMs?: number;
  /**
   * Scripts by model name: a request whose `model` names one takes that script's next step (each
   * loops or runs out on its own, at its own pace when it has one); any other takes `steps`. So
   * one server can give each agent its own script (`provider = "openai-compatible"`, `model =
   * "careful-writer"`).
   */
  scripts?: Readonly<Record<string, ModelScript>>;
  /**
   * `response_format` types the server refuses, as a server without structured outputs does: a
   * chat completion that asks for one (e.g. `json_schema`) is answered 400 naming it, and uses no
   * step of the script. What a client sent is in `requests` all the same.
   */
  refuseResponseFormats?: readonly string[];
}

/** A script as a file holds it (see {@link loadModelScript}). */
export interface ModelScript {
  steps: ScriptStep[];
  loop: boolean;
  /** The pace of its streamed replies (see {@link ScriptedModelServerOptions.paceMs}); the server's when left out. */
  paceMs?: number | undefined;
}

/** Steps still to play, and what to start over with. */
interface ScriptQueue {
  steps: ScriptStep[];
  looped: readonly ScriptStep[];
  loop: boolean;
  paceMs: number;
}

/**
 * Starts a real HTTP server (127.0.0.1, a free port, unless told otherwise) that speaks the
 * OpenAI Chat Completions API (`POST /v1/chat/completions`, JSON or SSE) and the Anthropic
 * Messages API (`POST /v1/messages`, JSON or SSE), answering each request with the next scripted
 * step. When the script runs out it answers 500 with "script exhausted" (so an unexpected extra
 * call fails the test that made it), or, with `loop`, starts it over. `loom model serve` runs it.
 */
export async function startScriptedModelServer(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const main: ScriptQueue = { steps: [...(options.steps ?? [])], looped: [...(options.steps ?? [])], loop: options.loop === true, paceMs: options.paceMs ?? 0 };
  const { steps } = main;
  const named = new Map(
    Object.entries(options.scripts ?? {}).map(([name, script]): [string, ScriptQueue] => [
      name,
      { steps: [...script.steps], looped: [...script.steps], loop: script.loop, paceMs: script.paceMs ?? options.paceMs ?? 0 },
    ]),
  );
  const requests: RecordedRequest[] = [];

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: String(error), type: 'server_error' } }));
    });
  });

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const api = path.endsWith('/chat/completions') ? 'openai' : path.endsWith('/messages') ? 'anthropic' : null;
    if (request.method !== 'POST' || api === null) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${path}` } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    if (options.recordRequests !== false) requests.push({ api, path, headers: request.headers, body });
    const format = (body['response_format'] as { type?: unknown } | undefined)?.type;
    if (api === 'openai' && typeof format === 'string' && options.refuseResponseFormats?.includes(format) === true) {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify(openAIError(`response_format type "${format}" is not supported by this server`)));
      return;
    }
    const model = typeof body['model'] === 'string' ? body['model'] : 'scripted';
    const queue = named.get(model) ?? main;
    if (queue.steps.length === 0 && queue.loop) queue.steps.push(...queue.looped);
    const step = queue.steps.shift() ?? { status: 500, body: api === 'openai' ? openAIError('script exhausted') : anthropicError('script exhausted') };
    if (isError(step)) {
      const errorBody = step.body ?? (api === 'openai' ? openAIError(`scripted HTTP ${step.status}`) : anthropicError(`scripted HTTP ${step.status}`));
      response.writeHead(step.status, { 'content-type': 'application/json', ...step.headers }).end(JSON.stringify(errorBody));
      return;
    }
    if (step.gate !== undefined) await step.gate.catch(() => undefined);
    const stream = body['stream'] === true;
    if (!stream && step.stall !== undefined) await step.stall.catch(() => undefined);
    // The events that carry the text (and those before it): a stalled stream stops after them.
    const textEvents = pieces(step.text ?? '').length + (api === 'openai' ? 1 : step.text === undefined ? 1 : 2);
    const hold = step.stall === undefined ? undefined : { after: textEvents, until: step.stall };
    if (api === 'openai') {
      const streamOptions = body['stream_options'] as { include_usage?: boolean } | undefined;
      if (stream)
        await writeSse(
          response,
          openAIStream(step, model, streamOptions?.include_usage === true).map((data) => ({ data })),
          true,
          hold,
          queue.paceMs,
        );
      else writeJson(response, openAIReply(step, model));
    } else if (stream) {
      await writeSse(
        response,
        anthropicStream(step, model).map((data) => ({ event: data['type'] as string, data })),
        false,
        hold,
        queue.paceMs,
      );
    } else {
      writeJson(response, anthropicReply(step, model));
    }
  };

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`,
    script: (more) => steps.push(...more),
    requests,
    remaining: () => steps.length,
    reset: () => {
      steps.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}

function writeJson(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function writeSse(
  response: ServerResponse,
  events: { event?: string; data: unknown }[],
  done: boolean,
  hold: { after: number; until: Promise<unknown> } | undefined,
  paceMs: number,
): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const [index, { event, data }] of events.entries()) {
    if (paceMs > 0 && index > 0) {
      // The pace of a person watching the words arrive: real time, as a real provider's.
      await delay(paceMs);
      if (response.destroyed) return;
    }
    if (hold !== undefined && index === hold.after) {
      await hold.until.catch(() => undefined);
      // The client may have hung up meanwhile (a cancelled turn).
      if (response.destroyed) return;
    }
    response.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
  }
  if (done) response.write('data: [DONE]\n\n');
  response.end();
}

function openAIError(message: string): unknown {
  return { error: { message, type: 'scripted_error', param: null, code: null } };
}

function anthropicError(message: string): unknown {
  return { type: 'error', error: { type: 'scripted_error', message } };
}

function usageOf(step: ScriptedReply): ScriptedUsage {
  return step.usage ?? { inputTokens: 10, outputTokens: 5 };
}

/** Anthropic's input usage: `input_tokens` is what the cache neither read nor wrote. */
function anthropicInput(usage: ScriptedUsage): Record<string, number> {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  return {
    input_tokens: Math.max(0, usage.inputTokens - read - write),
    ...(read > 0 ? { cache_read_input_tokens: read } : {}),
    ...(write > 0 ? { cache_creation_input_tokens: write } : {}),
  };
}

function finishOf(step: ScriptedReply): ScriptedFinishReason {
  return step.finishReason ?? ((step.toolCalls?.length ?? 0) > 0 ? 'tool-calls' : 'stop');
}

const OPENAI_FINISH: Record<ScriptedFinishReason, string> = { stop: 'stop', length: 'length', 'tool-calls': 'tool_calls', 'content-filter': 'content_filter' };
const ANTHROPIC_STOP: Record<ScriptedFinishReason, string> = { stop: 'end_turn', length: 'max_tokens', 'tool-calls': 'tool_use', 'content-filter': 'refusal' };

function openAIUsage(step: ScriptedReply): Record<string, unknown> {
  const usage = usageOf(step);
  const cached = usage.cacheReadTokens ?? 0;
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

function withIds(calls: ScriptedToolCall[] | undefined, prefix: string): Required<ScriptedToolCall>[] {
  return (calls ?? []).map((call) => ({ ...call, id: call.id ?? nextId(prefix) }));
}

function openAIReply(step: ScriptedReply, model: string): unknown {
  const toolCalls = withIds(step.toolCalls, 'call');
  return {
    id: nextId('chatcmpl'),
    object: 'chat.completion',
    created: 1_767_225_600,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: step.text ?? null,
          ...(toolCalls.length === 0
            ? {}
            : {
                tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input) } })),
              }),
        },
        finish_reason: OPENAI_FINISH[finishOf(step)],
      },
    ],
    usage: openAIUsage(step),
  };
}

/** Splits text into word-sized pieces, so a stream has more than one delta. */
function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function openAIStream(step: ScriptedReply, model: string, includeUsage: boolean): Record<string, unknown>[] {
  const id = nextId('chatcmpl');
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> => ({
    id,
    object: 'chat.completion.chunk',
    created: 1_767_225_600,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const chunks = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(step.text ?? '')) chunks.push(chunk({ content: piece }));
  withIds(step.toolCalls, 'call').forEach((call, index) => {
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    // The name and the first half of the arguments, then the rest: clients must join the parts.
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: args.slice(0, half) } }] }));
    chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  chunks.push(chunk({}, OPENAI_FINISH[finishOf(step)]));
  if (includeUsage) chunks.push({ id, object: 'chat.completion.chunk', created: 1_767_225_600, model, choices: [], usage: openAIUsage(step) });
  return chunks;
}

function anthropicReply(step: ScriptedReply, model: string): unknown {
  const usage = usageOf(step);
  const content: Record<string, unknown>[] = [];
  if (step.text !== undefined) content.push({ type: 'text', text: step.text });
  for (const call of withIds(step.toolCalls, 'toolu')) content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
  return {
    id: nextId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: ANTHROPIC_STOP[finishOf(step)],
    stop_sequence: null,
    usage: { ...anthropicInput(usage), output_tokens: usage.outputTokens },
  };
}

function anthropicStream(step: ScriptedReply, model: string): Record<string, unknown>[] {
  const usage = usageOf(step);
  const events: Record<string, unknown>[] = [
    {
      type: 'message_start',
      message: {
        id: nextId('msg'),
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...anthropicInput(usage), output_tokens: 1 },
      },
    },
  ];
  let index = 0;
  if (step.text !== undefined) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const piece of pieces(step.text)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  for (const call of withIds(step.toolCalls, 'toolu')) {
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } });
    events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  events.push({
    type: 'message_delta',
    delta: { stop_reason: ANTHROPIC_STOP[finishOf(step)], stop_sequence: null },
    usage: { output_tokens: usage.outputTokens },
  });
  events.push({ type: 'message_stop' });
  return events;
}

const ToolCallSchema = z.strictObject({ name: z.string().min(1), input: z.record(z.string(), z.json()).default({}), id: z.string().optional() });
const StepSchema = z.union([
  z.strictObject({ status: z.int().min(400).max(599), headers: z.record(z.string(), z.string()).optional(), body: z.json().optional() }),
  z.strictObject({
    text: z.string().optional(),
    toolCalls: z.array(ToolCallSchema).optional(),
    usage: z
      .strictObject({
        inputTokens: z.int().min(0),
        outputTokens: z.int().min(0),
        cacheReadTokens: z.int().min(0).optional(),
        cacheWriteTokens: z.int().min(0).optional(),
      })
      .optional(),
    finishReason: z.enum(['stop', 'length', 'tool-calls', 'content-filter']).optional(),
  }),
]);

/** A script file: its steps, and whether it starts over when it runs out. */
export const ModelScriptSchema = z.union([
  z.array(StepSchema).min(1, { error: 'expected at least one step' }),
  z.strictObject({
    loop: z.boolean().default(false),
    /** Milliseconds before each streamed event after the first (see `paceMs`). */
    pace_ms: z.int().min(0).max(10_000).optional(),
    steps: z.array(StepSchema).min(1, { error: 'expected at least one step' }),
  }),
]);

/**
 * Reads a script for `loom model serve`: a JSON array of steps, or `{ "loop": true, "pace_ms": 30,
 * "steps": [...] }`. A step is a reply (`text`, `toolCalls` of `{ name, input }`, `usage`,
 * `finishReason`) or an HTTP error (`status`, `body`).
 * @throws {LoomError} `MODEL_SCRIPT_INVALID` naming the file and the JSON path.
 */
export async function loadModelScript(path: string): Promise<ModelScript> {
  const text = await readFile(path, 'utf8').catch((error: unknown) => {
    throw new LoomError('MODEL_SCRIPT_INVALID', 'user', `cannot read model script "${path}": ${error instanceof Error ? error.message : String(error)}`);
  });
  const json = safeParseJson(text);
  if (!json.ok) throw new LoomError('MODEL_SCRIPT_INVALID', 'user', `model script "${path}": JSON syntax error: ${json.message}`);
  const parsed = ModelScriptSchema.safeParse(json.value, { reportInput: true });
  if (!parsed.success)
    throw new LoomError('MODEL_SCRIPT_INVALID', 'user', `model script "${path}": ${formatIssues(parsed.error, { style: 'json' }).join('; ')}`);
  if (Array.isArray(parsed.data)) return { steps: parsed.data as ScriptStep[], loop: false };
  const { steps, loop, pace_ms: paceMs } = parsed.data;
  return { steps: steps as ScriptStep[], loop, ...(paceMs === undefined ? {} : { paceMs }) };
}

/**
 * Reads every `*.json` script in `dir`, each named by its file name without `.json` (the model
 * name that plays it: `careful-writer.json` for `model = "careful-writer"`).
 * @throws {LoomError} `MODEL_SCRIPT_INVALID` for a folder that cannot be read, holds no script, or a script that is malformed.
 */
export async function loadModelScripts(dir: string): Promise<Record<string, ModelScript>> {
  const names = await readdir(dir).catch((error: unknown) => {
    throw new LoomError('MODEL_SCRIPT_INVALID', 'user', `cannot read the model scripts in "${dir}": ${error instanceof Error ? error.message : String(error)}`);
  });
  const files = names.filter((name) => name.endsWith('.json')).sort();
  if (files.length === 0) throw new LoomError('MODEL_SCRIPT_INVALID', 'user', `cannot serve the model scripts in "${dir}": it holds no .json file`);
  const scripts: Record<string, ModelScript> = {};
  for (const file of files) scripts[basename(file, '.json')] = await loadModelScript(join(dir, file));
  return scripts;
}
