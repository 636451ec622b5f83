import { type Stats, statSync } from 'node:fs';

/** How a file or folder stands, as a read of it depends on it: its inode, times and size; `-` when it is not there. */
export function fileState(path: string): string {
  const info = statSync(path, { throwIfNoEntry: false });
  return info === undefined ? '-' : statsState(info);
}

/** {@link fileState} of stats already taken. */
export function statsState(info: Stats): string {
  return `${info.ino} ${info.mtimeMs} ${info.ctimeMs} ${info.size}`;
}

/**
 * `read`, its result kept for each key (`keyOf`) while the files it read stand as they did
 * (`stateOf`, taken synchronously before each call: a few `stat`s where a read parses files), at
 * most `limit` keys, the least lately read forgotten first. A read that fails is not kept; a state
 * that cannot be taken reads again. Two writes of a file of the same size within the file
 * system's clock tick (a few milliseconds) look like one.
 */
export function keptWhileUnchanged<K, T>(options: {
  read: (key: K) => Promise<T>;
  keyOf: (key: K) => string;
  stateOf: (key: K) => string;
  limit: number;
}): (key: K) => Promise<T> {
  const { read, keyOf, stateOf, limit } = options;
  const kept = new Map<string, { state: string; value: Promise<T> }>();
  return (key) => {
    let state: string;
    try {
      state = stateOf(key);
    } catch {
      return read(key);
    }
    const name = keyOf(key);
    const known = kept.get(name);
    if (known !== undefined && known.state === state) return known.value;
    const value = read(key);
    kept.delete(name);
    kept.set(name, { state, value });
    for (const oldest of kept.keys()) {
      if (kept.size <= limit) break;
      kept.delete(oldest);
    }
    void value.catch(() => {
      if (kept.get(name)?.value === value) kept.delete(name);
    });
    return value;
  };
}
