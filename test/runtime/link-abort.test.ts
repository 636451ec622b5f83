import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkAbort } from '../../src/runtime/index.ts';

describe('linkAbort', () => {
  it("aborts the controller with the parent's reason, at once when the parent already has", () => {
    const parent = new AbortController();
    const child = new AbortController();
    linkAbort(parent.signal, child);
    expect(child.signal.aborted).toBe(false);
    const reason = new Error('stopped');
    parent.abort(reason);
    expect(child.signal.reason).toBe(reason);

    const late = new AbortController();
    linkAbort(parent.signal, late);
    expect(late.signal.reason).toBe(reason);
  });

  it('leaves nothing on the parent once unlinked, and no parent is no link', () => {
    const parent = new AbortController();
    const child = new AbortController();
    const unlink = linkAbort(parent.signal, child);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    unlink();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort(new Error('too late'));
    expect(child.signal.aborted).toBe(false);
    linkAbort(undefined, child)();
    expect(child.signal.aborted).toBe(false);
  });
});
