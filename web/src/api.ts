import { parseSse } from './sse.ts';
import { apiClient, type ApiRequestInit, pathOf } from '../../src/wire/api-client.ts';
// A value import of the route table: the build (web/vite.config.ts) gives the bundle each route's method, path and answer's media alone.
import { API } from '../../src/wire/routes.ts';
import type { AnswerOf, BodyOf } from '../../src/wire/index.ts';
import { AUDIT_KINDS, type AgentEvent, type KernelEvent } from './types.ts';

export { API };

const KEY_STORAGE = 'loom.apiKey';

/** The API key the dashboard sends (only needed when the daemon has `[[auth.keys]]`). */
export function apiKey(): string {
  return localStorage.getItem(KEY_STORAGE) ?? '';
}

export function setApiKey(key: string): void {
  if (key === '') localStorage.removeItem(KEY_STORAGE);
  else localStorage.setItem(KEY_STORAGE, key);
}

/** An error the API answered with (`{ error: { code, message } }`), or a network failure. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

function headersWith(extra: Record<string, string> = {}): Record<string, string> {
  const key = apiKey();
  return key === '' ? extra : { ...extra, 'x-api-key': key };
}

async function toApiError(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.message !== undefined) return new ApiError(response.status, body.error.code ?? 'ERROR', body.error.message);
  } catch {
    // Not JSON: fall through to the status line.
  }
  return new ApiError(response.status, 'HTTP_' + String(response.status), text.trim() || response.statusText);
}

/** Sends a request with the key; a daemon that does not answer is an {@link ApiError} of status 0 (`NETWORK`). */
async function fetchOrGone(path: string, init: ApiRequestInit): Promise<Response> {
  try {
    return await fetch(path, { ...init, headers: headersWith(init.headers) });
  } catch (error) {
    throw new ApiError(0, 'NETWORK', `the daemon did not answer (${error instanceof Error ? error.message : String(error)})`);
  }
}

/**
 * Calls a route of the API's table and resolves with its answer, typed by the route (`T` narrows
 * an answer the table leaves wide, such as the audit log's rows). @throws {ApiError}
 */
const calls = apiClient({ fetch: fetchOrGone, error: toApiError });
export const call = calls.call.bind(calls);

/**
 * Approves or denies a pending tool call (owner keys only); an empty reason is none. `answer`
 * answers a question (an MCP server asking a person). @throws {ApiError}
 */
export function decideApproval(id: string, approved: boolean, reason = '', answer?: Record<string, unknown>): Promise<AnswerOf<typeof API.approve>> {
  // The question form's fields are JSON values (strings, numbers, booleans, lists of strings).
  const fields: BodyOf<typeof API.approve> = {
    ...(reason.trim() === '' ? {} : { reason: reason.trim() }),
    ...(answer === undefined ? {} : { answer: answer as NonNullable<BodyOf<typeof API.approve>['answer']> }),
  };
  return call(approved ? API.approve : API.deny, { params: { id }, ...(Object.keys(fields).length === 0 ? {} : { body: fields }) });
}

/**
 * Runs a package binding now (owner or user keys; a viewer key gets 403) and resolves with the
 * finished run, as the API waits for it to end. @throws {ApiError} (409 `BINDING_BUSY` while it is still running)
 */
export function runBinding(slug: string, binding: string, inputs: BodyOf<typeof API.runBinding>['inputs'] = {}): Promise<AnswerOf<typeof API.runBinding>> {
  return call(API.runBinding, { params: { slug, binding }, body: { inputs } });
}

/** The header of a request for a stream of events. */
export const EVENT_STREAM = { accept: 'text/event-stream' } as const;

/**
 * Opens a route that answers with a stream of agent events (`POST …/messages`, `GET …/turn`,
 * asked with {@link EVENT_STREAM}). @throws {ApiError} when the route refuses; fetch's TypeError when the connection fails.
 */
const streams = apiClient({ fetch: (path, init) => fetch(path, { ...init, headers: headersWith(init.headers) }), error: toApiError });
export const open = streams.open.bind(streams);

/**
 * Reads an open stream of agent events and calls `onEvent` for each as it arrives, with its id
 * (what `Last-Event-ID` takes); `onOpen` first. @throws fetch's TypeError when the connection breaks.
 */
export async function readEvents(response: Response, onEvent: (event: AgentEvent, id: string | undefined) => void, onOpen?: () => void): Promise<void> {
  if (response.body === null) throw new ApiError(response.status, 'NO_BODY', 'the reply had no body');
  onOpen?.();
  for await (const sse of parseSse(response.body)) {
    if (sse.event === undefined || sse.data === '') continue;
    onEvent(JSON.parse(sse.data) as AgentEvent, sse.id);
  }
}

/** Every type the audit log's kinds name (agents, approvals, turns, tool calls, packages, workflows…): the live stream listens for them by name. */
const AUDITED_EVENT_TYPES: readonly string[] = [...new Set(Object.values(AUDIT_KINDS).flat())];

export type ConnectionState = 'connecting' | 'open' | 'closed';

/**
 * Follows `/api/events`. Without an API key it is an EventSource (which reconnects by itself);
 * with one, EventSource cannot send the header, so fetch reads the stream and reconnects.
 * Returns a function that stops.
 */
export function followKernelEvents(onEvent: (event: KernelEvent) => void, onState: (state: ConnectionState) => void): () => void {
  const key = apiKey();
  if (key === '') {
    const source = new EventSource(pathOf(API.events));
    const listener = (message: MessageEvent<string>): void => onEvent(JSON.parse(message.data) as KernelEvent);
    for (const type of AUDITED_EVENT_TYPES) source.addEventListener(type, listener);
    source.onmessage = listener;
    source.onopen = () => onState('open');
    source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'closed' : 'connecting');
    return () => source.close();
  }
  const stop = new AbortController();
  void (async () => {
    while (!stop.signal.aborted) {
      onState('connecting');
      try {
        const response = await fetch(pathOf(API.events), { headers: headersWith({ accept: 'text/event-stream' }), signal: stop.signal });
        if (response.ok && response.body !== null) {
          onState('open');
          for await (const sse of parseSse(response.body)) if (sse.data !== '') onEvent(JSON.parse(sse.data) as KernelEvent);
        }
      } catch {
        // Dropped or refused: wait and reconnect below.
      }
      onState('closed');
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  })();
  return () => stop.abort();
}

/** Promotes a forged tool one tier (owner keys only): the panel for the agent tier, a person's approval for shared. @throws {ApiError} */
export function promoteForgedTool(id: string): Promise<AnswerOf<typeof API.promoteTool>> {
  return call(API.promoteTool, { params: { id } });
}

/** Demotes a forged tool one tier (owner keys only). @throws {ApiError} */
export function demoteForgedTool(id: string, reason = ''): Promise<AnswerOf<typeof API.demoteTool>> {
  return call(API.demoteTool, { params: { id }, ...(reason.trim() === '' ? {} : { body: { reason: reason.trim() } }) });
}

/** Lets the person given a pairing code talk to their channel's agent (owner keys only). @throws {ApiError} */
export function approvePairing(code: string): Promise<AnswerOf<typeof API.approvePairing>> {
  return call(API.approvePairing, { params: { code } });
}

/** A manifest as the editor holds it: its text, sent as TOML or JSON. */
export const manifestBody = (text: string, format: 'toml' | 'json'): { content: string; type: string } => ({
  content: text,
  type: format === 'toml' ? 'application/toml' : 'application/json',
});

/** Checks a manifest without spawning anything: every error at its line, and the warnings. @throws {ApiError} */
export function validateManifest(text: string, format: 'toml' | 'json', signal?: AbortSignal): Promise<AnswerOf<typeof API.validateManifest>> {
  return call(API.validateManifest, { text: manifestBody(text, format), ...(signal === undefined ? {} : { signal }) });
}

/** What a failed API call means to a page: the daemon went away, the thing asked for does not exist, or anything else. */
export interface Failure {
  kind: 'gone' | 'not-found' | 'other';
  code: string;
  message: string;
}

/**
 * Sorts a failed call for a page to say plainly: no answer at all (the daemon stopped: keep what
 * the user typed and say so), a 404 (nothing by that name: no error box, just say it), or the
 * daemon's own message.
 */
export function failureOf(error: unknown): Failure {
  if (error instanceof ApiError) {
    if (error.status === 0)
      return {
        kind: 'gone',
        code: error.code,
        message: `The Loom daemon at ${window.location.origin} does not answer. Start it again (npm start, or loom start); this page picks up when it is back.`,
      };
    if (error.status === 404) return { kind: 'not-found', code: error.code, message: error.message };
    return { kind: 'other', code: error.code, message: error.message };
  }
  return { kind: 'other', code: 'ERROR', message: error instanceof Error ? error.message : String(error) };
}
