/**
 * The key of the turn an A2A message starts: the task and the client's message id, readable when
 * short, and bounded whatever the client sends (keys are indexed: PostgreSQL refuses an index
 * entry of a few KB).
 */
import { describe, expect, it } from 'vitest';
import { taskTurnKey } from '../../src/a2a/agent-executor.ts';

describe('taskTurnKey', () => {
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
});
