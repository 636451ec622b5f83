/**
 * What a turn's journal keeps of its request is what the turn needs to run again after a crash: a
 * scheduled wake-up resumes on its `[schedule].model` and under its cycle's cap, not on the
 * manifest's model with no cap; and it names its wake-up, which a job taken again looks for.
 */
import { describe, expect, it } from 'vitest';
import { readRequest, requestRecord } from '../../src/kernel/turn-journal.ts';

const caller = { kind: 'user', role: 'owner', name: 'scheduler' } as const;

describe('a journaled turn request', () => {
  it("keeps a scheduled wake-up's model, cycle and wake-up through the store's JSON", () => {
    const wake = { trigger: 'cron', dueAt: Date.UTC(2026, 0, 5, 9) };
    const stored = JSON.parse(
      JSON.stringify(requestRecord({ message: 'wake up', caller, cycle: true, wake, model: { provider: 'openai', model: 'gpt-4o-mini' } })),
    ) as Record<string, never>;
    expect(readRequest(stored)).toEqual({ message: 'wake up', caller, cycle: true, wake, model: { provider: 'openai', model: 'gpt-4o-mini' } });
  });

  it('leaves out a wake-up this Loom cannot read', () => {
    expect(readRequest({ message: 'wake up', caller, cycle: true, wake: { trigger: 'cron', dueAt: '09:00' } })).toEqual({
      message: 'wake up',
      caller,
      cycle: true,
    });
    expect(readRequest({ message: 'wake up', caller, cycle: true, wake: null })).toEqual({ message: 'wake up', caller, cycle: true });
  });

  it("leaves out a model this Loom cannot read, and a person's message has neither", () => {
    expect(readRequest({ message: 'hi', caller, model: { provider: 'nobody', model: 7 } })).toEqual({ message: 'hi', caller });
    expect(readRequest(requestRecord({ message: 'hi', caller }))).toEqual({ message: 'hi', caller });
  });
});
