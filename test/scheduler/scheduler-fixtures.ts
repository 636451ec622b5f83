import type { AgentEntry } from '../../src/kernel/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import type { FileChangeListener, WatchFiles } from '../../src/scheduler/index.ts';

/** A running agent entry whose manifest is parsed from TOML (the name is prepended). */
export function agentEntry(name: string, scheduleToml: string, id = `id-${name}`): AgentEntry {
  const { manifest } = parseManifest(`name = "${name}"\n${scheduleToml}`, { source: `${name}.toml` });
  return {
    id,
    name,
    state: 'running',
    parentId: null,
    children: new Set(),
    sessionId: `session-${name}`,
    manifest,
    capabilities: [],
    createdAt: 0,
    updatedAt: 0,
  };
}

/** One call of the recording `send`, with the clock time it was made at. */
export interface SendCall {
  agentId: string;
  message: string;
  at: number;
}

/** A `send` that records its calls and resolves (or does what `respond` says). */
export function recordingSend(
  now: () => number,
  respond: (call: SendCall) => Promise<unknown> = () => Promise.resolve(),
): { send: (agentId: string, message: string) => Promise<unknown>; calls: SendCall[] } {
  const calls: SendCall[] = [];
  return {
    calls,
    send: (agentId, message) => {
      const call = { agentId, message, at: now() };
      calls.push(call);
      return respond(call);
    },
  };
}

/** A promise with its resolve and reject in hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/** One directory the fake watcher was asked to watch. */
export interface FakeWatch {
  directory: string;
  onChange: FileChangeListener;
  closed: boolean;
}

/** An injectable {@link WatchFiles} that records watches; tests report changes with `emit`. */
export function createFakeWatcher(): { watch: WatchFiles; watches: FakeWatch[]; emit(path: string, exists?: boolean): void } {
  const watches: FakeWatch[] = [];
  return {
    watches,
    watch: (directory, onChange) => {
      const entry: FakeWatch = { directory, onChange, closed: false };
      watches.push(entry);
      return () => {
        entry.closed = true;
      };
    },
    emit: (path, exists = true) => {
      for (const entry of watches) if (!entry.closed) entry.onChange(path, exists);
    },
  };
}
