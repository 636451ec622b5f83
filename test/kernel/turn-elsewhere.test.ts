/**
 * `untilTurnHere`: a message (or the look-up of its turn) asked again while its turn runs on
 * another node, for at most ten minutes counted from when it was first told so.
 */
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { LoomError } from '../../src/errors/index.ts';
import { TURN_ELSEWHERE_RETRY_MS, TURN_ELSEWHERE_WAIT_MS, untilTurnHere } from '../../src/kernel/turn-elsewhere.ts';
import { waitFor } from '../support/wait-for.ts';

const takenOver = (): LoomError => new LoomError('TURN_TAKEN_OVER', 'system', 'the turn was taken over by another node');
const runningElsewhere = (): LoomError => new LoomError('TURN_RUNNING', 'user', 'the turn is still running on another node; retry later');

describe('untilTurnHere', () => {
  it('waits for a turn that ran here for longer than the wait, then was taken over: the ten minutes start when it is first told so', async () => {
    const clock = createFakeClock();
    const answers: (() => Promise<string>)[] = [
      // The turn runs here for a quarter of an hour (an approval waited for), then its lease is found lapsed.
      async () => {
        await clock.advance(15 * 60_000);
        throw takenOver();
      },
      () => Promise.reject(runningElsewhere()),
      () => Promise.resolve('the reply the other node finished'),
    ];
    let asked = 0;
    const reply = untilTurnHere(() => answers[asked++]?.() ?? Promise.reject(new Error('asked too often')), clock, new AbortController().signal);
    for (let retry = 0; retry < 2; retry += 1) {
      await waitFor('the next wait', () => clock.pending() === 1);
      await clock.advance(TURN_ELSEWHERE_RETRY_MS);
    }
    await expect(reply).resolves.toBe('the reply the other node finished');
    expect(asked).toBe(3);
  });

  it('gives up once the turn has been elsewhere for the whole wait, with what it was last told', async () => {
    const clock = createFakeClock();
    let asked = 0;
    const reply = untilTurnHere(
      () => {
        asked += 1;
        return Promise.reject(runningElsewhere());
      },
      clock,
      new AbortController().signal,
    );
    const settled = reply.catch((error: unknown) => error);
    for (let waited = 0; waited < TURN_ELSEWHERE_WAIT_MS; waited += TURN_ELSEWHERE_RETRY_MS) {
      await waitFor('the next wait', () => clock.pending() === 1);
      await clock.advance(TURN_ELSEWHERE_RETRY_MS);
    }
    expect(await settled).toMatchObject({ code: 'TURN_RUNNING' });
    expect(asked).toBe(TURN_ELSEWHERE_WAIT_MS / TURN_ELSEWHERE_RETRY_MS + 1);
  });

  it('does not ask again after an error that says nothing of another node', async () => {
    const clock = createFakeClock();
    let asked = 0;
    const failed = new LoomError('TURN_FAILED', 'system', 'the turn this message started failed: the model is down');
    await expect(
      untilTurnHere(
        () => {
          asked += 1;
          return Promise.reject(failed);
        },
        clock,
        new AbortController().signal,
      ),
    ).rejects.toBe(failed);
    expect(asked).toBe(1);
  });
});
