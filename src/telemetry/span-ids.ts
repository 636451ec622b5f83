import { randomFillSync } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';

/** Random bytes drawn at once: 256 span ids' worth, so a span costs no system call. */
const POOL_BYTES = 2048;

/** The two hex digits of each byte. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * Trace and span ids from the operating system's random source, drawn 2 KB at a time and read
 * through a byte-to-hex table: the SDK's default generator writes `Math.random()` into a buffer
 * and hex-encodes it for every id, which the profile of a traced turn showed as a tenth of each
 * span's start. An id that comes out all zeros (invalid in W3C trace context) ends in 01.
 */
export function createSpanIdGenerator(): IdGenerator {
  const pool = Buffer.allocUnsafe(POOL_BYTES);
  let offset = POOL_BYTES;
  const next = (bytes: number): string => {
    if (offset + bytes > POOL_BYTES) {
      randomFillSync(pool);
      offset = 0;
    }
    let id = '';
    let zero = true;
    for (let index = offset; index < offset + bytes; index++) {
      const byte = pool[index] as number;
      if (byte !== 0) zero = false;
      id += HEX[byte] as string;
    }
    offset += bytes;
    return zero ? `${id.slice(0, -2)}01` : id;
  };
  return { generateTraceId: () => next(16), generateSpanId: () => next(8) };
}
