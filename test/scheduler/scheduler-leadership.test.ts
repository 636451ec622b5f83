import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { Leadership } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { CONTINUOUS_WAKE_MESSAGE, createScheduler, intervalInstants } from '../../src/scheduler/index.ts';
import { agentEntry, recordingSend } from './scheduler-fixtures.ts';

const MINUTE = 60_000;

/** A leadership the test hands over and takes back, granting each instant once and in order (as the database does). */
function testLeadership(leading: boolean): Leadership & { set(value: boolean): void; claims: { key: string; at: number }[]; refuse: Set<number> } {
  const listeners = new Set<(leader: boolean) => void>();
  const newest = new Map<string, number>();
  const claims: { key: string; at: number }[] = [];
  const refuse = new Set<number>();
  return {
    claims,
    refuse,
    isLeader: () => leading,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    claim(key, at) {
      if (!leading || refuse.has(at) || (newest.get(key) ?? Number.NEGATIVE_INFINITY) >= at) return Promise.resolve(false);
      newest.set(key, at);
      claims.push({ key, at });
      return Promise.resolve(true);
    },
    othersAlive: () => Promise.resolve(true),
    set(value) {
      leading = value;
      for (const listener of listeners) listener(value);
    },
  };
}

describe('scheduler with a leadership (several daemons on one database)', () => {
  it('runs nothing while another node leads, starts when this one leads, and stops at once when it no longer does', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(false);
    const { send, calls } = recordingSend(() => clock.now());
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send, leadership });
    const fired: number[] = [];
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    void scheduler.start(agentEntry('worker', '[schedule]\nmode = "continuous"\ninterval_seconds = 60\n'));

    await clock.advance(5 * MINUTE);
    expect(calls).toEqual([]);
    expect(fired).toEqual([]);

    leadership.set(true);
    const since = clock.now();
    await clock.advance(3 * MINUTE);
    expect(fired).toEqual([since + MINUTE, since + 2 * MINUTE, since + 3 * MINUTE]);
    expect(calls.map((call) => [call.agentId, call.message])).toEqual([
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
      ['id-worker', CONTINUOUS_WAKE_MESSAGE],
    ]);
    expect(leadership.claims.filter((claim) => claim.key === 'package beat/check').map((claim) => claim.at)).toEqual(fired);
    expect(leadership.claims.filter((claim) => claim.key === 'agent id-worker continuous')).toHaveLength(3);

    leadership.set(false);
    await clock.advance(5 * MINUTE);
    expect(fired).toHaveLength(3);
    expect(calls).toHaveLength(3);

    // Leading again picks up what it was given, from then on.
    leadership.set(true);
    await clock.advance(MINUTE);
    expect(fired).toHaveLength(4);
    expect(calls).toHaveLength(4);
    scheduler.stopAll();
  });

  it('does not fire an instant whose claim is refused (another node fired it), and fires the next one', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send: () => Promise.resolve(), leadership });
    const fired: number[] = [];
    const start = clock.now();
    leadership.refuse.add(start + 2 * MINUTE);
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    await clock.advance(3 * MINUTE);
    expect(fired).toEqual([start + MINUTE, start + 3 * MINUTE]);
    scheduler.stopAll();
  });

  it('does not fire an instant while the claim cannot be made (the database is unreachable), and goes on afterwards', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1));
    const leadership = testLeadership(true);
    let reachable = false;
    const grant = leadership.claim.bind(leadership);
    leadership.claim = (key, at) => (reachable ? grant(key, at) : Promise.reject(new Error('connection refused')));
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), send: () => Promise.resolve(), leadership });
    const fired: number[] = [];
    scheduler.addTimer({ name: 'package beat/check', next: intervalInstants(MINUTE, clock), fire: (at) => fired.push(at) });
    await clock.advance(2 * MINUTE);
    expect(fired).toEqual([]);
    reachable = true;
    await clock.advance(MINUTE);
    expect(fired).toHaveLength(1);
    scheduler.stopAll();
  });
});
