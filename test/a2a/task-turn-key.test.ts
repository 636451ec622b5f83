/**
 * The key of the turn an A2A message starts (the task and the client's message id) and the
 * conversation of its context: readable when short, and bounded whatever the client sends (keys
 * are indexed: PostgreSQL refuses an index entry of a few KB).
 */
import { describe, expect, it } from 'vitest';
import { taskThread, taskTurnKey, taskTurnPlaces } from '../../src/a2a/task-turn-places.ts';

describe('taskTurnKey and taskThread', () => {
  it('keeps a message id of ordinary length as it is', () => {
    expect(taskTurnKey('task-1', 'm-1')).toBe('a2a:task-1:m-1');
  });

  it('bounds a long message id by its SHA-256, one key per id', () => {
    const long = 'x'.repeat(10_000);
    const key = taskTurnKey('task-1', long);
    expect(key.length).toBeLessThan(200);
    expect(key).toMatch(/^a2a:task-1:sha256:[0-9a-f]{64}$/);
    expect(taskTurnKey('task-1', long)).toBe(key);
    expect(taskTurnKey('task-1', `${long}y`)).not.toBe(key);
  });

  it("bounds a client's context id the same way, in the conversation the task's turns go to", () => {
    expect(taskThread('ctx-1')).toBe('a2a:ctx-1');
    expect(taskThread('c'.repeat(5_000))).toMatch(/^a2a:sha256:[0-9a-f]{64}$/);
  });

  it('looks a turn up where this version journals it, then where a daemon before the upgrade did, for ids past 128 characters only', () => {
    expect(taskTurnPlaces('task-1', 'm-1', 'ctx-1')).toEqual([{ key: 'a2a:task-1:m-1', thread: 'a2a:ctx-1' }]);
    const [message, context] = ['m'.repeat(200), 'c'.repeat(200)];
    expect(taskTurnPlaces('task-1', message, context)).toEqual([
      { key: taskTurnKey('task-1', message), thread: taskThread(context) },
      { key: taskTurnKey('task-1', message), thread: `a2a:${context}` },
      { key: `a2a:task-1:${message}`, thread: `a2a:${context}` },
    ]);
    expect(taskTurnPlaces('task-1', message, 'ctx-1')).toEqual([
      { key: taskTurnKey('task-1', message), thread: 'a2a:ctx-1' },
      { key: `a2a:task-1:${message}`, thread: 'a2a:ctx-1' },
    ]);
  });
});
