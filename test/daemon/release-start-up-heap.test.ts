import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { releaseStartUpHeap } from '../../src/daemon/index.ts';

/** Pages the young generation holds, in bytes. */
function youngGeneration(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? Number.NaN;
}

describe('releaseStartUpHeap', () => {
  it('gives back the young generation that a burst of surviving allocations grew', () => {
    // Like a start: many objects allocated in a row that survive their first collections.
    const survivors: object[] = [];
    for (let index = 0; index < 300_000; index += 1) survivors.push({ index, name: `object-${index}` });
    const grown = youngGeneration();
    survivors.length = 0;
    expect(releaseStartUpHeap()).toBe(true);
    expect(youngGeneration()).toBeLessThan(grown);
  });

  it('leaves no collector to contexts made after it, such as a sandbox', () => {
    releaseStartUpHeap();
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
  });
});
