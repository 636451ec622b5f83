import { isLoomError, LoomError } from '../errors/index.ts';
import { safeParseJson } from '../validation/index.ts';
import type { CliEvent } from './backend.ts';

/** How long `loom chat` and `loom send --stream` wait before each try to take a broken stream up again: doubling, bounded (about 16 s in all). */
export const RECONNECT_DELAYS_MS: readonly number[] = [250, 500, 1000, 2000, 4000, 8000];

/** One server-sent event: its `id:` (when it has one) and its `data:` lines joined. */
interface SseBlock {
  id: string | undefined;
  data: string;
}

/** Parses a `text/event-stream` body event by event. */
async function* readBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<SseBlock> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let boundary = buffer.indexOf('\n\n'); boundary !== -1; boundary = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, boundary).split('\n');
      buffer = buffer.slice(boundary + 2);
      const id = lines
        .find((line) => line.startsWith('id:'))
        ?.slice(3)
        .trim();
      const data = lines
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      yield { id, data };
    }
  }
}

/** The events of a streamed turn's body, each with its id, as the CLI renders them (`rewind` said as a notice). */
async function* readTurnEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id: string | undefined; event: CliEvent }> {
  for await (const block of readBlocks(body)) {
    const parsed = block.data === '' ? undefined : safeParseJson(block.data);
    if (parsed?.ok !== true) continue;
    const event = parsed.value as CliEvent | { type: 'rewind' };
    if (event.type === 'rewind')
      yield {
        id: undefined,
        event: { type: 'notice', text: 'the daemon restarted after this reply showed more than it had saved; here is the reply from its start:' },
      };
    else yield { id: block.id, event };
  }
}

/** Whether `error` is a connection that broke under a reply (fetch's "terminated"), or a daemon that cannot be reached. */
function isBroken(error: unknown): boolean {
  return (error instanceof TypeError && error.message === 'terminated') || (isLoomError(error) && error.code === 'DAEMON_UNREACHABLE');
}

/** Whether `signal` was aborted (read afresh: it changes while the stream waits). */
function stopped(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Waits `ms`, less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** What {@link reconnectingTurn} needs: the daemon's URL (for messages), how `GET …/turn` is asked from an event id, how an error answer is read. */
export interface TurnSource {
  url: string;
  /** `GET …/turn` with `Last-Event-ID` (none: from the start). @throws {LoomError} `DAEMON_UNREACHABLE` */
  follow(lastEventId: string | undefined): Promise<Response>;
  toError(response: Response): Promise<LoomError>;
}

/**
 * The events of a streamed turn whose first response is `body`; when the stream breaks before
 * the turn's end (the daemon restarted, the network failed), takes it up again from the last
 * event's id (`Last-Event-ID`, decision 0059), saying so with a `notice` before each try, and
 * waiting {@link RECONNECT_DELAYS_MS} between tries; a stream that comes back starts the count
 * again. A turn that ended while the stream was away ends it with a notice: its reply is in the
 * session. `signal` stops it.
 * @throws {LoomError} `DAEMON_UNREACHABLE` once every try failed; the daemon's refusal.
 */
export async function* reconnectingTurn(body: ReadableStream<Uint8Array>, source: TurnSource, signal: AbortSignal | undefined): AsyncGenerator<CliEvent> {
  let current: ReadableStream<Uint8Array> | undefined = body;
  let lastEventId: string | undefined;
  let attempt = 0;
  for (;;) {
    try {
      for await (const { id, event } of readTurnEvents(current)) {
        if (id !== undefined) lastEventId = id;
        yield event;
        if (event.type === 'run-finish' || event.type === 'error') return;
      }
    } catch (error) {
      if (stopped(signal) || !isBroken(error)) throw error;
    }
    if (stopped(signal)) return;
    // Broken before any event named its turn: following "the running turn" could show another
    // message's reply as this one's, so it is not taken up again.
    if (lastEventId === undefined) {
      throw new LoomError(
        'DAEMON_UNREACHABLE',
        'system',
        `lost the connection to the Loom daemon at ${source.url} before the reply's first event named its turn, so it is not taken up again; if the daemon runs, the reply goes on there and is kept in the agent's session (loom chat shows it)`,
      );
    }
    current = undefined;
    while (current === undefined) {
      const delay = RECONNECT_DELAYS_MS[attempt];
      if (delay === undefined) {
        const seconds = Math.round(RECONNECT_DELAYS_MS.reduce((sum, ms) => sum + ms, 0) / 1000);
        throw new LoomError(
          'DAEMON_UNREACHABLE',
          'system',
          `lost the connection to the Loom daemon at ${source.url} while the reply streamed, and could not get it back (${RECONNECT_DELAYS_MS.length} tries over ${seconds} s); \`loom status\` tells whether it runs, \`loom start\` starts it; the reply goes on in the daemon if it runs, and what the agent said is kept in its session`,
        );
      }
      attempt += 1;
      yield { type: 'notice', text: `the connection to the daemon broke; reconnecting… (try ${attempt} of ${RECONNECT_DELAYS_MS.length})` };
      await pause(delay, signal);
      if (stopped(signal)) return;
      let response: Response;
      try {
        response = await source.follow(lastEventId);
      } catch (error) {
        if (isBroken(error)) continue;
        throw error;
      }
      if (response.status === 409) {
        await response.body?.cancel();
        yield { type: 'notice', text: 'the reply ended while the connection was down; it is in the session' };
        return;
      }
      if (response.ok && response.body !== null) {
        current = response.body;
        attempt = 0;
      } else if (response.status < 500) throw await source.toError(response);
      else await response.body?.cancel();
    }
  }
}
