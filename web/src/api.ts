import { parseSse } from './sse.ts';
import type { AnswerOf, API, BodyOf } from '../../src/wire/index.ts';
import { AUDIT_KINDS, type AgentEvent, type KernelEvent } from './types.ts';

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

/** Calls the API and parses its JSON answer. @throws {ApiError} */
export async function api<T>(path: string, init: { method?: string; body?: string; contentType?: string; signal?: AbortSignal } = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: init.method ?? 'GET',
      headers: headersWith(init.contentType === undefined ? {} : { 'content-type': init.contentType }),
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.signal === undefined ? {} : { signal: init.signal }),
    });
  } catch (error) {
    throw new ApiError(0, 'NETWORK', `the daemon did not answer (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!response.ok) throw await toApiError(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

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
  const body = Object.keys(fields).length === 0 ? undefined : JSON.stringify(fields);
  return api<AnswerOf<typeof API.approve>>(`/api/approvals/${encodeURIComponent(id)}/${approved ? 'approve' : 'deny'}`, {
    method: 'POST',
    ...(body === undefined ? {} : { body, contentType: 'application/json' }),
  });
}

/**
 * Runs a package binding now (owner or user keys; a viewer key gets 403) and resolves with the
 * finished run, as the API waits for it to end. @throws {ApiError} (409 `BINDING_BUSY` while it is still running)
 */
export function runBinding(slug: string, binding: string, inputs: BodyOf<typeof API.runBinding>['inputs'] = {}): Promise<AnswerOf<typeof API.runBinding>> {
  const body: BodyOf<typeof API.runBinding> = { inputs };
  return api<AnswerOf<typeof API.runBinding>>(`/api/packages/${encodeURIComponent(slug)}/bindings/${encodeURIComponent(binding)}/run`, {
    method: 'POST',
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
}

/**
 * Opens an endpoint that answers with a stream of agent events (`POST …/messages`, `GET …/turn`)
 * and calls `onEvent` for each as it arrives, with its id (what `Last-Event-ID` takes); `onOpen`
 * once the stream is open. Aborting `signal` stops listening.
 * @throws {ApiError} when the endpoint refuses; fetch's TypeError when the connection fails or breaks.
 */
export async function streamEvents(
  path: string,
  init: { method?: string; body?: string; contentType?: string; headers?: Record<string, string>; onOpen?: () => void },
  onEvent: (event: AgentEvent, id: string | undefined) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headersWith({ ...(init.contentType === undefined ? {} : { 'content-type': init.contentType }), ...init.headers, accept: 'text/event-stream' }),
    ...(init.body === undefined ? {} : { body: init.body }),
    signal,
  });
  if (!response.ok) throw await toApiError(response);
  if (response.body === null) throw new ApiError(response.status, 'NO_BODY', 'the reply had no body');
  init.onOpen?.();
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
    const source = new EventSource('/api/events');
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
        const response = await fetch('/api/events', { headers: headersWith({ accept: 'text/event-stream' }), signal: stop.signal });
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
  return api<AnswerOf<typeof API.promoteTool>>(`/api/tools/forged/${encodeURIComponent(id)}/promote`, { method: 'POST' });
}

/** Demotes a forged tool one tier (owner keys only). @throws {ApiError} */
export function demoteForgedTool(id: string, reason = ''): Promise<AnswerOf<typeof API.demoteTool>> {
  const fields: BodyOf<typeof API.demoteTool> = { reason: reason.trim() };
  const body = reason.trim() === '' ? undefined : JSON.stringify(fields);
  return api<AnswerOf<typeof API.demoteTool>>(`/api/tools/forged/${encodeURIComponent(id)}/demote`, {
    method: 'POST',
    ...(body === undefined ? {} : { body, contentType: 'application/json' }),
  });
}

/** Lets the person given a pairing code talk to their channel's agent (owner keys only). @throws {ApiError} */
export function approvePairing(code: string): Promise<AnswerOf<typeof API.approvePairing>> {
  return api(`/api/channels/pairings/${encodeURIComponent(code)}/approve`, { method: 'POST' });
}

/** Checks a manifest without spawning anything: every error at its line, and the warnings. @throws {ApiError} */
export function validateManifest(text: string, format: 'toml' | 'json', signal?: AbortSignal): Promise<AnswerOf<typeof API.validateManifest>> {
  return api<AnswerOf<typeof API.validateManifest>>('/api/manifests/validate', {
    method: 'POST',
    body: text,
    contentType: format === 'toml' ? 'application/toml' : 'application/json',
    ...(signal === undefined ? {} : { signal }),
  });
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
