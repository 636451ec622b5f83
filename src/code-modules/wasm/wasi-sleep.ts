// WASI preview 1's layout of `poll_oneoff`'s subscriptions and events, and its errno values.
const SUBSCRIPTION_BYTES = 48;
const EVENT_BYTES = 32;
const EVENTTYPE_CLOCK = 0;
const CLOCK_REALTIME = 0;
const SUBCLOCK_ABSTIME = 0x1;
const ERRNO_SUCCESS = 0;
const ERRNO_FAULT = 21;
const ERRNO_INVAL = 28;

type Call = (...args: number[]) => number;

/**
 * `wasiImport` (node:wasi's functions) with a `poll_oneoff` that only waits on clocks (a sleep)
 * answered here: node:wasi sleeps in native code there, where `worker.terminate()` cannot reach
 * it, so a module asking to sleep for years would hold its thread past its time limit and the
 * daemon's shutdown. Here the thread sleeps in `Atomics.wait`, which `terminate()` interrupts.
 * A poll that also waits on a descriptor goes to node:wasi, which answers it at once (a module's
 * descriptors are a file and the null device, always ready).
 */
export function withWakeableSleep(
  wasiImport: Record<string, WebAssembly.ImportValue>,
  memory: () => WebAssembly.Memory | undefined,
): Record<string, WebAssembly.ImportValue> {
  const pollOneoff = wasiImport['poll_oneoff'] as Call;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  return {
    ...wasiImport,
    poll_oneoff: (inPointer: number, outPointer: number, count: number, eventsPointer: number): number => {
      const current = memory();
      if (current === undefined) return ERRNO_FAULT;
      const subscriptions = inPointer >>> 0;
      const events = outPointer >>> 0;
      const total = count >>> 0;
      const written = eventsPointer >>> 0;
      if (total === 0) return ERRNO_INVAL;
      const size = current.buffer.byteLength;
      if (subscriptions + total * SUBSCRIPTION_BYTES > size || events + total * EVENT_BYTES > size || written + 4 > size) return ERRNO_FAULT;
      const view = new DataView(current.buffer);
      const clocks: { userdata: bigint; deadline: bigint }[] = [];
      for (let index = 0; index < total; index += 1) {
        const at = subscriptions + index * SUBSCRIPTION_BYTES;
        if (view.getUint8(at + 8) !== EVENTTYPE_CLOCK) return pollOneoff(inPointer, outPointer, count, eventsPointer);
        const timeout = view.getBigUint64(at + 24, true);
        const absolute = (view.getUint16(at + 40, true) & SUBCLOCK_ABSTIME) !== 0;
        // Deadlines on the monotonic clock, in nanoseconds; an absolute time on the wall clock is
        // moved onto it (the other clocks run with it closely enough for a sleep).
        const now = process.hrtime.bigint();
        const deadline = !absolute
          ? now + timeout
          : view.getUint32(at + 16, true) === CLOCK_REALTIME
            ? now + timeout - BigInt(Date.now()) * 1_000_000n
            : timeout;
        clocks.push({ userdata: view.getBigUint64(at, true), deadline });
      }
      const first = clocks.reduce((earliest, clock) => (clock.deadline < earliest ? clock.deadline : earliest), clocks[0]?.deadline ?? 0n);
      const waitNs = first - process.hrtime.bigint();
      if (waitNs > 0n) Atomics.wait(sleeper, 0, 0, Math.ceil(Number(waitNs) / 1_000_000));
      const now = process.hrtime.bigint();
      let fired = 0;
      for (const clock of clocks) {
        if (clock.deadline > now && clock.deadline !== first) continue;
        const at = events + fired * EVENT_BYTES;
        new Uint8Array(current.buffer, at, EVENT_BYTES).fill(0);
        view.setBigUint64(at, clock.userdata, true);
        view.setUint16(at + 8, ERRNO_SUCCESS, true);
        view.setUint8(at + 10, EVENTTYPE_CLOCK);
        fired += 1;
      }
      view.setUint32(written, fired, true);
      return ERRNO_SUCCESS;
    },
  };
}
