import { watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Told about one path under a watched directory: `exists` is false when the event left nothing
 * there (a delete or a rename away), so the scheduler can forget it and see it created again.
 */
export type FileChangeListener = (path: string, exists: boolean) => void;

/**
 * Watches `directory` (and what is below it) and reports each changed path, as a full path
 * joined onto `directory`. Returns a function that stops watching. May throw when the directory
 * cannot be watched (it does not exist, say); later failures go to `onError`.
 */
export type WatchFiles = (directory: string, onChange: FileChangeListener, onError: (error: unknown) => void) => () => void;

/**
 * The default {@link WatchFiles}, on `node:fs.watch` (recursive, not keeping the process
 * alive). Each event is followed by a `stat` to learn whether the path still exists.
 *
 * @throws the `fs.watch` error (`ENOENT` and the like) when `directory` cannot be watched.
 */
export const watchFilesWithNode: WatchFiles = (directory, onChange, onError) => {
  let closed = false;
  const watcher = watch(directory, { recursive: true, persistent: false }, (_eventType, filename) => {
    if (filename === null) return;
    const path = join(directory, filename);
    stat(path).then(
      () => !closed && onChange(path, true),
      () => !closed && onChange(path, false),
    );
  });
  // An 'error' event with no listener would crash the process.
  watcher.on('error', onError);
  return () => {
    closed = true;
    watcher.close();
  };
};
