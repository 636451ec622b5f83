/** WASI preview 1's `notsup`: the answer to a call Loom does not let a module make. */
const ERRNO_NOTSUP = 58;

/**
 * `wasiImport` (node:wasi's functions) with `fd_close` and `fd_renumber` refused (`notsup`).
 *
 * A WASI module's descriptors are real numbers in the daemon's own table (a worker thread shares
 * its process's), opened by Loom for the message and closed by Loom when it ends. A number the
 * module closed (or renumbered over) would be free for the next file the daemon opens (a socket,
 * the store's database, a log), and Loom's own close at the end of the message would then close
 * that file instead. A module sees only stdin, stdout and stderr (no preopened folder, so nothing
 * it opens itself), and these two calls are the only ones in preview 1 that free a descriptor: with
 * them refused, every number Loom closes is still the one it opened.
 */
export function withFixedDescriptors(wasiImport: Record<string, WebAssembly.ImportValue>): Record<string, WebAssembly.ImportValue> {
  return {
    ...wasiImport,
    fd_close: (): number => ERRNO_NOTSUP,
    fd_renumber: (): number => ERRNO_NOTSUP,
  };
}
