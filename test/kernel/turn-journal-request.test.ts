/**
 * What a turn's journal keeps of its request is what the turn needs to run again after a crash: a
 * scheduled wake-up resumes on its `[schedule].model` and under its cycle's cap, not on the
 * manifest's model with no cap.
 */
import { describe, expect, it } from 'vitest';
import { readRequest, requestRecord } from '../../src/kernel/turn-journal.ts';

const caller = { kind: 'user', role: 'owner', name: 'scheduler' } as const;

describe('a journaled turn request', () => {
  it("keeps a scheduled wake-up's model and cycle through the store's JSON", () => {
    const stored = JSON.parse(
      JSON.stringify(requestRecord({ message: 'wake up', caller, cycle: true, model: { provider: 'openai', model: 'gpt-4o-mini' } })),
    ) as Record<string, never>;
    expect(readRequest(stored)).toEqual({ message: 'wake up', caller, cycle: true, model: { provider: 'openai', model: 'gpt-4o-mini' } });
  });

  it("leaves out a model this Loom cannot read, and a person's message has neither", () => {
    expect(readRequest({ message: 'hi', caller, model: { provider: 'nobody', model: 7 } })).toEqual({ message: 'hi', caller });
    expect(readRequest(requestRecord({ message: 'hi', caller }))).toEqual({ message: 'hi', caller });
  });
});
