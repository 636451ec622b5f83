import { ApiError } from './api.ts';
import type { AgentEvent } from './types.ts';

/** How a turn's stream stands: open, or broken and being taken up again (try `attempt` of `of`). */
export type StreamState = { kind: 'live' } | { kind: 'reconnecting'; attempt: number; of: number };

/** How long to wait before each try to take a broken stream up again: doubling, bounded (about 16 s in all). */
export const RECONNECT_DELAYS_MS: readonly number[] = [250, 500, 1000, 2000, 4000, 8000];

/** A stream of a turn's events, each with its id; `onOpen` once it is open. */
type Opener = (onEvent: (event: AgentEvent, id: string | undefined) => void, signal: AbortSignal, onOpen: () => void) => Promise<void>;

/**
 * Streams a turn (`open`: the message sent, or the turn followed) and, when the stream breaks
 * before the turn's end (the daemon restarted, the network failed), takes it up again with
 * `follow` from the last event's id (`Last-Event-ID`, decision 0059): each event reaches
 * `onEvent` once. Tries {@link RECONNECT_DELAYS_MS} times, waiting longer each time; a stream
 * that comes back starts the count again. A turn that ended while the stream was away (409
 * `TURN_NOT_RUNNING`) ends it quietly: its reply is in the session. A stream that fails before its
 * first event is not taken up again: the message may never have reached the daemon.
 * @throws {ApiError} a refusal; `STREAM_LOST` (status 0) once every try failed.
 */
export async function streamTurn(
  open: Opener,
  follow: (lastEventId: string | undefined) => Opener,
  onEvent: (event: AgentEvent) => void,
  signal: AbortSignal,
  onState: (state: StreamState) => void,
): Promise<void> {
  let lastEventId: string | undefined;
  let seenAny = false;
  let ended = false;
  let attempt = 0;
  const opened = (): void => {
    if (attempt === 0) return;
    attempt = 0;
    onState({ kind: 'live' });
  };
  const seen = (event: AgentEvent, id: string | undefined): void => {
    if (id !== undefined) lastEventId = id;
    seenAny = true;
    if (event.type === 'run-finish' || event.type === 'error') ended = true;
    onEvent(event);
  };
  let connect: Opener = open;
  for (;;) {
    try {
      await connect(seen, signal, opened);
    } catch (error) {
      if (signal.aborted) return;
      // A message that never reached the daemon (nothing came back) is not followed: it was not sent.
      if (!seenAny) throw error;
      if (error instanceof ApiError && attempt > 0 && error.code === 'TURN_NOT_RUNNING') return;
      // A refusal is final; a broken connection (fetch's TypeError) or a daemon not up yet (5xx) is tried again.
      if (error instanceof ApiError && error.status < 500) throw error;
    }
    if (ended || signal.aborted) return;
    const delay = RECONNECT_DELAYS_MS[attempt];
    if (delay === undefined) {
      const seconds = Math.round(RECONNECT_DELAYS_MS.reduce((sum, ms) => sum + ms, 0) / 1000);
      throw new ApiError(
        0,
        'STREAM_LOST',
        `lost the connection to the daemon and could not get it back (${RECONNECT_DELAYS_MS.length} tries over ${seconds} s). The reply goes on in the daemon if it runs: reload the page to see it.`,
      );
    }
    attempt += 1;
    onState({ kind: 'reconnecting', attempt, of: RECONNECT_DELAYS_MS.length });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    connect = follow(lastEventId);
  }
}
