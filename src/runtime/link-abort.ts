/**
 * Aborts `controller` when `parent` aborts, with the parent's reason (at once when it already
 * has), and returns what removes the one listener this puts on `parent`: call it when the work
 * the controller stands for ends. For a signal that lives as long as a turn or a tool call,
 * cheaper than `AbortSignal.any`, which registers the composite with each source (a weak
 * reference each) and, once a listener is added to it, follows its sources.
 */
export function linkAbort(parent: AbortSignal | undefined, controller: AbortController): () => void {
  if (parent === undefined) return unlinked;
  if (parent.aborted) {
    controller.abort(parent.reason);
    return unlinked;
  }
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return () => parent.removeEventListener('abort', onAbort);
}

function unlinked(): void {}
