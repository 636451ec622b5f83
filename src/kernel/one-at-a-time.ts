/**
 * A lineup of async work: each runs after the one before it has settled, whether that succeeded
 * or failed. For work that must not interleave at its awaits (a spawn and an update judging by
 * each other's agents; two installs sharing skill folders).
 */
export function createLineup(): <T>(work: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(work: () => Promise<T>): Promise<T> => {
    const run = last.then(work);
    last = run.catch(() => undefined);
    return run;
  };
}
