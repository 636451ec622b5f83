import { describe, expect, it } from 'vitest';
import { AUDIT_KINDS, AUDIT_OUTCOMES } from '../../src/kernel/audit-kinds.ts';
import * as dashboard from '../../web/src/types.ts';

// The dashboard cannot import the daemon's modules, so it keeps a copy of what the Events page
// filters on; a kind the daemon records but the copy lacks vanished from the page's filters.
describe("the dashboard's copy of the audit kinds", () => {
  it('covers every kind and outcome with the same event types as the daemon', () => {
    expect(dashboard.AUDIT_KINDS).toEqual(AUDIT_KINDS);
    expect(dashboard.AUDIT_OUTCOMES).toEqual(AUDIT_OUTCOMES);
  });
});
