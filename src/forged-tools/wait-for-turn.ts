/**
 * Waits for `previous` (the call ahead in a tool's queue: calls of one tool take turns) unless
 * `signal` aborts first. True when the turn came, false when the call was cancelled while it
 * waited. Imports nothing: the sandbox process loads it too.
 */
export async function waitForTurn(previous: Promise<unknown>, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal === undefined) {
    await previous;
    return true;
  }
  let onAbort!: () => void;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const waited = await Promise.race([previous.then(() => 'turn' as const), aborted]);
  signal.removeEventListener('abort', onAbort);
  return waited === 'turn';
}
