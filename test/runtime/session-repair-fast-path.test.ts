import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  dropOrphanedToolResults,
  ensureAlternation,
  fixToolCallReferences,
  isWellFormed,
  mergeConsecutiveSameRole,
  removeEmptyMessages,
  repairSession,
  validateContentBlocks,
} from '../../src/runtime/index.ts';

/** Phases 1-6, the slow way: what the fast path must agree with. */
function fullRepair(messages: readonly ModelMessage[]): ModelMessage[] {
  let current = [...messages];
  for (const phase of [
    dropOrphanedToolResults,
    removeEmptyMessages,
    mergeConsecutiveSameRole,
    validateContentBlocks,
    fixToolCallReferences,
    ensureAlternation,
  ]) {
    current = phase(current).messages;
  }
  return current;
}

/** A small seeded generator (mulberry32), so failures reproduce. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

/** Histories that are mostly well formed, with every kind of damage mixed in now and then. */
function history(next: () => number): ModelMessage[] {
  const pick = <T>(options: readonly T[]): T => options[Math.floor(next() * options.length)] as T;
  const messages: ModelMessage[] = [];
  if (next() < 0.2) messages.push({ role: 'system', content: 'be brief' });
  let id = 0;
  const turns = 1 + Math.floor(next() * 5);
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({ role: 'user', content: pick(['hi', 'go on', '   ', '']) });
    if (next() < 0.1) messages.push({ role: 'user', content: 'again' });
    const calls = Math.floor(next() * 3);
    if (calls > 0) {
      const ids = Array.from({ length: calls }, () => `c${(id += 1)}`);
      messages.push({ role: 'assistant', content: ids.map((toolCallId) => ({ type: 'tool-call' as const, toolCallId, toolName: 'agent_list', input: {} })) });
      const answered = next() < 0.15 ? ids.slice(1) : ids;
      const results = answered.map((toolCallId) => ({
        type: 'tool-result' as const,
        toolCallId: next() < 0.05 ? 'ghost' : toolCallId,
        toolName: 'agent_list',
        output: { type: 'text' as const, value: 'none' },
      }));
      if (results.length > 0 && next() > 0.05) messages.push({ role: 'tool', content: next() < 0.05 ? [...results, ...results] : results });
    }
    messages.push({ role: 'assistant', content: next() < 0.1 ? [{ type: 'text', text: '' }] : [{ type: 'text', text: 'done' }] });
    if (next() < 0.05) messages.push({ role: 'system', content: 'late system message' });
  }
  if (next() < 0.05) messages.unshift({ role: 'assistant', content: 'I start' });
  return messages;
}

describe('the session repair fast path', () => {
  it('isWellFormed() is true only for histories the seven phases leave unchanged', () => {
    const next = random(20261121);
    let wellFormed = 0;
    let damaged = 0;
    for (let sample = 0; sample < 3000; sample += 1) {
      const messages = history(next);
      if (isWellFormed(messages)) {
        wellFormed += 1;
        expect(fullRepair(messages)).toEqual(messages);
      } else {
        damaged += 1;
      }
    }
    // Both kinds were generated, so the check above was exercised both ways.
    expect(wellFormed).toBeGreaterThan(200);
    expect(damaged).toBeGreaterThan(300);
  });

  it('repairSession() gives the same result through the fast path as through every phase', () => {
    const next = random(7);
    for (let sample = 0; sample < 1000; sample += 1) {
      const messages = history(next);
      expect(repairSession(messages).messages).toEqual(fullRepair(messages));
    }
  });

  it('isWellFormed() from a well-formed prefix agrees with the check of the whole history', () => {
    const next = random(20261123);
    let compared = 0;
    let damagedAfterPrefix = 0;
    for (let sample = 0; sample < 1500; sample += 1) {
      const messages = history(next);
      const whole = isWellFormed(messages);
      for (let length = 1; length < messages.length; length += 1) {
        if (!isWellFormed(messages.slice(0, length))) continue;
        compared += 1;
        if (!whole) damagedAfterPrefix += 1;
        expect(isWellFormed(messages, length)).toBe(whole);
      }
    }
    // Damage after a well-formed prefix was generated, so the resumed check had something to find.
    expect(compared).toBeGreaterThan(1000);
    expect(damagedAfterPrefix).toBeGreaterThan(100);
  });

  it('repairSession() with a well-formed prefix repairs what follows it as a whole repair would', () => {
    const user = { role: 'user', content: 'hi' } as ModelMessage;
    const answer = { role: 'assistant', content: 'hello' } as ModelMessage;
    const orphan = {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'ghost', toolName: 'agent_list', output: { type: 'text', value: 'x' } }],
    } as ModelMessage;
    const damaged = [user, answer, orphan, user];
    const repaired = repairSession(damaged, { wellFormedPrefix: 2 });
    expect(repaired.wellFormed).toBe(false);
    expect(repaired.messages).toEqual(fullRepair(damaged));
    expect(repairSession([user, answer, user], { wellFormedPrefix: 2 })).toMatchObject({ wellFormed: true, messages: [user, answer, user] });
  });

  it('isWellFormed() refuses the damage each phase repairs', () => {
    const call = { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'agent_list', input: {} }] } as ModelMessage;
    const result = {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'agent_list', output: { type: 'text', value: 'x' } }],
    } as ModelMessage;
    const user = { role: 'user', content: 'hi' } as ModelMessage;
    expect(isWellFormed([user, call, result, { role: 'assistant', content: 'ok' }])).toBe(true);
    expect(isWellFormed([user, result])).toBe(false); // orphaned result
    expect(isWellFormed([user, { role: 'assistant', content: ' ' }])).toBe(false); // empty
    expect(isWellFormed([user, user])).toBe(false); // same role twice
    expect(isWellFormed([user, { role: 'assistant', content: [{ type: 'text', text: '' }] }])).toBe(false); // invalid part
    expect(isWellFormed([user, call])).toBe(false); // unanswered call
    expect(isWellFormed([call, result])).toBe(false); // starts with the assistant
  });
});
