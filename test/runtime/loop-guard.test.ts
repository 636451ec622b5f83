import { describe, expect, it } from 'vitest';
import {
  createLoopGuard,
  LOOP_GUARD_BLOCK_AT,
  LOOP_GUARD_BREAK_AT,
  LOOP_GUARD_PING_PONG_BLOCK_AT,
  LOOP_GUARD_PING_PONG_WARN_AT,
  LOOP_GUARD_WARN_AT,
  type LoopGuard,
  type LoopGuardVerdict,
} from '../../src/runtime/index.ts';

/** Calls `check` `times` times with the same call and returns every verdict. */
function repeat(guard: LoopGuard, times: number, toolName = 'web_fetch', params: unknown = { url: 'https://a.test' }) {
  return Array.from({ length: times }, () => guard.check(toolName, params));
}

function actions(verdicts: LoopGuardVerdict[]): string[] {
  return verdicts.map((verdict) => verdict.action);
}

describe('createLoopGuard()', () => {
  it('exports the spec defaults as named constants', () => {
    expect([LOOP_GUARD_WARN_AT, LOOP_GUARD_BLOCK_AT, LOOP_GUARD_BREAK_AT]).toEqual([3, 5, 30]);
    expect([LOOP_GUARD_PING_PONG_WARN_AT, LOOP_GUARD_PING_PONG_BLOCK_AT]).toEqual([3, 5]);
  });

  it('allows the 1st and 2nd identical call', () => {
    expect(actions(repeat(createLoopGuard(), 2))).toEqual(['allow', 'allow']);
  });

  it('warns at the 3rd identical call with a hint naming the tool and the count', () => {
    const verdict = repeat(createLoopGuard(), 3).at(-1);
    expect(verdict?.action).toBe('warn');
    expect(verdict).toMatchObject({ hint: expect.stringContaining('"web_fetch" 3 times') as unknown });
  });

  it('still warns, without refusing, at the 4th identical call', () => {
    const verdict = repeat(createLoopGuard(), 4).at(-1);
    expect(verdict).toMatchObject({ action: 'warn', hint: expect.stringContaining('4 times') as unknown });
  });

  it('refuses the 5th identical call with a message naming the tool and the count', () => {
    const verdict = repeat(createLoopGuard(), 5).at(-1);
    expect(verdict).toEqual({
      action: 'block',
      message: expect.stringMatching(/^Refused tool call "web_fetch": it was called 5 times with the same parameters/) as unknown,
    });
  });

  it('keeps refusing identical calls after the 5th', () => {
    expect(actions(repeat(createLoopGuard(), 8)).slice(4)).toEqual(['block', 'block', 'block', 'block']);
  });

  it('treats parameters that differ only in key order, at any depth, as the same call', () => {
    const guard = createLoopGuard();
    guard.check('search', { query: 'loom', options: { limit: 5, lang: 'en' } });
    guard.check('search', { options: { lang: 'en', limit: 5 }, query: 'loom' });
    expect(guard.check('search', { options: { limit: 5, lang: 'en' }, query: 'loom' }).action).toBe('warn');
  });

  it('treats different parameters, different tools and reordered arrays as different calls', () => {
    const guard = createLoopGuard();
    expect(actions([guard.check('a', { ids: [1, 2] }), guard.check('a', { ids: [2, 1] }), guard.check('a', { ids: [1, 2, 3] })])).toEqual([
      'allow',
      'allow',
      'allow',
    ]);
    expect(actions([guard.check('b', { ids: [1, 2] }), guard.check('c', { ids: [1, 2] })])).toEqual(['allow', 'allow']);
  });

  it('tells long calls apart and together as it does short ones', () => {
    const guard = createLoopGuard();
    const long = (last: string): Record<string, string> => ({ content: `${'x'.repeat(500)}${last}` });
    expect(actions([guard.check('file_write', long('a')), guard.check('file_write', long('b')), guard.check('file_write', long('a'))])).toEqual([
      'allow',
      'allow',
      'allow',
    ]);
    expect(guard.check('file_write', { ...long('a') }).action).toBe('warn');
    expect(guard.check('file_write', long('b')).action).toBe('allow');
  });

  it('honours custom warn and block thresholds', () => {
    expect(actions(repeat(createLoopGuard({ warnAt: 2, blockAt: 3 }), 3))).toEqual(['allow', 'warn', 'block']);
  });

  it('breaks at the 30th repeated identical call (the 31st call) and not before', () => {
    const verdicts = repeat(createLoopGuard(), 31);
    expect(verdicts[29]?.action).toBe('block');
    expect(verdicts[30]).toEqual({
      action: 'break',
      message: expect.stringContaining('after 30 repeated tool calls; the last was "web_fetch", called 31 times') as unknown,
    });
  });

  it('counts repeats of different calls together toward the circuit breaker', () => {
    const guard = createLoopGuard({ warnAt: 100, blockAt: 100 });
    const tools = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
    // 10 first calls, then every call repeats one: the 30th repeat is call 40.
    const verdicts = Array.from({ length: 40 }, (_, index) => guard.check(tools[index % tools.length] ?? 'a', {}));
    expect(verdicts.slice(0, 39).every((verdict) => verdict.action === 'allow')).toBe(true);
    expect(verdicts[39]?.action).toBe('break');
  });

  it('keeps answering break for every call once the breaker has tripped, even new ones', () => {
    const guard = createLoopGuard({ breakAt: 2 });
    repeat(guard, 3);
    expect(guard.check('something_new', { fresh: true }).action).toBe('break');
  });

  it('warns when two calls alternate for 3 full cycles and names both tools', () => {
    const guard = createLoopGuard({ warnAt: 100, blockAt: 100 });
    const verdicts = Array.from({ length: 6 }, (_, index) => guard.check(index % 2 === 0 ? 'read_file' : 'write_file', { path: 'x' }));
    expect(actions(verdicts.slice(0, 5))).toEqual(['allow', 'allow', 'allow', 'allow', 'allow']);
    expect(verdicts[5]).toEqual({
      action: 'warn',
      hint: expect.stringContaining('alternating between "read_file" and "write_file" for 3 cycles') as unknown,
    });
  });

  it('refuses the call that completes 5 alternating cycles', () => {
    const guard = createLoopGuard({ warnAt: 100, blockAt: 100 });
    const verdicts = Array.from({ length: 10 }, (_, index) => guard.check('fetch', { page: index % 2 }));
    expect(actions(verdicts)).toEqual(['allow', 'allow', 'allow', 'allow', 'allow', 'warn', 'warn', 'warn', 'warn', 'block']);
    expect(verdicts[9]).toMatchObject({ message: expect.stringContaining('two different "fetch" calls for 5 cycles') as unknown });
  });

  it('gives the ping-pong hint rather than the repeat hint when both apply at the defaults', () => {
    const guard = createLoopGuard();
    const verdicts = Array.from({ length: 6 }, (_, index) => guard.check(index % 2 === 0 ? 'a' : 'b', {}));
    expect(verdicts[4]).toMatchObject({ action: 'warn', hint: expect.stringContaining('"a" 3 times') as unknown });
    expect(verdicts[5]).toMatchObject({ action: 'warn', hint: expect.stringContaining('alternating between "a" and "b"') as unknown });
  });

  it('does not see ping-pong when a third call interrupts the alternation', () => {
    const guard = createLoopGuard({ warnAt: 100, blockAt: 100 });
    const verdicts = ['a', 'b', 'a', 'b', 'c', 'a', 'b', 'a', 'b'].map((tool) => guard.check(tool, {}));
    expect(verdicts.every((verdict) => verdict.action === 'allow')).toBe(true);
  });

  it('does not count one call repeated back to back as ping-pong', () => {
    const guard = createLoopGuard({ warnAt: 100, blockAt: 100 });
    expect(repeat(guard, 12).every((verdict) => verdict.action === 'allow')).toBe(true);
  });

  it('forgets every call after reset()', () => {
    const guard = createLoopGuard({ breakAt: 3 });
    repeat(guard, 4);
    guard.reset();
    expect(actions(repeat(guard, 3))).toEqual(['allow', 'allow', 'warn']);
  });

  it('throws a RangeError for a threshold that is not a positive integer, or block below warn', () => {
    expect(() => createLoopGuard({ warnAt: 0 })).toThrow(/warnAt must be a positive integer, got 0/);
    expect(() => createLoopGuard({ breakAt: 2.5 })).toThrow(RangeError);
    expect(() => createLoopGuard({ warnAt: 4, blockAt: 3 })).toThrow(/blockAt \(3\) must not be below warnAt \(4\)/);
  });
});
