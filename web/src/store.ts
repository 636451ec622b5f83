import { useEffect, useState } from 'preact/hooks';
import { type ConnectionState, followKernelEvents } from './api.ts';
import { isPackageEvent, type KernelEvent } from './types.ts';

/** The live event log, kept for the whole visit so the Events page shows what happened since the dashboard opened. */
const MAX_EVENTS = 500;
const log: KernelEvent[] = [];
let state: ConnectionState = 'connecting';
/** Package events received: two can share a type, run and millisecond, so the Packages page keys on the count. */
let packageEvents = 0;
const listeners = new Set<() => void>();
let stop: (() => void) | undefined;

function notify(): void {
  for (const listener of listeners) listener();
}

/** Connects once; every page shares the connection. */
export function startEventLog(): void {
  stop ??= followKernelEvents(
    (event) => {
      log.unshift(event);
      if (isPackageEvent(event)) packageEvents += 1;
      if (log.length > MAX_EVENTS) log.length = MAX_EVENTS;
      notify();
    },
    (next) => {
      state = next;
      notify();
    },
  );
}

/** The event log (newest first) and the connection state; re-renders on each event. */
export function useEventLog(): { events: readonly KernelEvent[]; state: ConnectionState; version: number } {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const listener = (): void => setVersion((v) => v + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return { events: log, state, version };
}

/** A number that changes whenever a kernel event arrives: pages list it as a dependency to reload. */
export function useEventVersion(): number {
  return useEventLog().version;
}

/**
 * A key that changes whenever an approval is requested or decided (`approval-request` /
 * `approval-decide` on the shared event stream): pages that show approvals reload on it.
 */
export function useApprovalVersion(): string {
  const { events, state } = useEventLog();
  const latest = events.find((event) => event.type === 'approval-request' || event.type === 'approval-decide');
  // Reconnecting may have missed events: reload then too.
  return `${state}:${latest === undefined ? '' : `${latest.type}:${String(latest['approvalId'])}:${latest.at}`}`;
}

/** A key that changes whenever a package event arrives (a run fired, progressed or ended): the Packages page reloads on it. */
export function usePackageVersion(): string {
  const { state } = useEventLog();
  // Reconnecting may have missed events: reload then too.
  return `${state}:${packageEvents}`;
}
