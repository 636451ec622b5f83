import { describe, expect, it } from 'vitest';
import {
  type Baseline,
  compareWithBaseline,
  type ConformanceCheck,
  readBaseline,
  REVISIONS,
  requirementSet,
  type ScenarioResult,
  summarize,
} from './conformance-runner.ts';

const check = (id: string, status: ConformanceCheck['status']): ConformanceCheck => ({ id, status, errorMessage: `${id} said ${status}` });
const result = (scenario: string, ...checks: ConformanceCheck[]): ScenarioResult => ({ scenario, checks });

const baseline: Baseline = {
  server: [
    { scenario: 'prompts-list', revisions: ['2025-11-25'], reason: 'no prompts' },
    { scenario: 'caching', revisions: ['2025-11-25'], reason: 'no resources', checks: ['resources-hints'] },
  ],
  client: [],
};

describe('compareWithBaseline()', () => {
  it('accepts failures the baseline lists, and passes', () => {
    const results = [
      result('prompts-list', check('prompts-list', 'FAILURE')),
      result('caching', check('tools-hints', 'SUCCESS'), check('resources-hints', 'FAILURE')),
      result('ping', check('ping', 'SUCCESS')),
    ];
    expect(compareWithBaseline('2025-11-25', 'server', results, ['prompts-list', 'caching', 'ping'], baseline)).toEqual({
      unexpected: [],
      stale: [],
      missing: [],
    });
  });

  it('reports a failing or warning check the baseline does not list, even in a baselined scenario', () => {
    const results = [
      result('prompts-list', check('prompts-list', 'FAILURE')),
      result('caching', check('tools-hints', 'WARNING'), check('resources-hints', 'FAILURE')),
      result('ping', check('ping', 'FAILURE')),
    ];
    const { unexpected } = compareWithBaseline('2025-11-25', 'server', results, [], baseline);
    expect(unexpected).toEqual([
      'server 2025-11-25 caching: WARNING tools-hints: tools-hints said WARNING',
      'server 2025-11-25 ping: FAILURE ping: ping said FAILURE',
    ]);
  });

  it('reports an entry that now passes, a listed check that now passes, and an entry not run, so the baseline shrinks', () => {
    const results = [
      result('prompts-list', check('prompts-list', 'SUCCESS')),
      result('caching', check('resources-hints', 'SUCCESS'), check('other', 'FAILURE')),
    ];
    const { stale } = compareWithBaseline('2025-11-25', 'server', results, [], {
      ...baseline,
      server: [...baseline.server, { scenario: 'gone', revisions: ['2025-11-25'], reason: 'x' }],
    });
    expect(stale).toEqual([
      'server 2025-11-25 prompts-list passes: remove it from the baseline',
      'server 2025-11-25 caching: check resources-hints passes: remove it from the baseline',
      'server 2025-11-25 gone is in the baseline but was not run',
    ]);
  });

  it('reports a scenario of the requirement set that left no result, and ignores entries of another revision', () => {
    expect(compareWithBaseline('2026-07-28', 'server', [result('ping', check('ping', 'SUCCESS'))], ['ping', 'tools-list'], baseline)).toEqual({
      unexpected: [],
      stale: [],
      missing: ['server 2026-07-28 tools-list left no result'],
    });
  });
});

describe('summarize()', () => {
  it('counts the scenarios that pass, scored and not, and the checks by status', () => {
    const results = [
      result('ping', check('ping', 'SUCCESS')),
      result('caching', check('a', 'SUCCESS'), check('b', 'WARNING')),
      result('tasks', check('t', 'FAILURE'), check('u', 'INFO')),
    ];
    expect(summarize('2026-07-28', 'server', results, { scored: ['ping', 'caching', 'tools-list'], notScored: ['tasks'] })).toBe(
      'conformance server 2026-07-28: 1/3 scored scenarios pass, 0/1 not scored; checks 2 passed, 1 failed, 1 warned',
    );
  });
});

describe('the conformance baseline file', () => {
  it('gives every entry a reason and names only scenarios of the requirement sets it lists', async () => {
    const file = await readBaseline();
    for (const leg of ['server', 'client'] as const) {
      for (const entry of file[leg]) {
        expect(entry.reason.length, `${entry.scenario} needs a reason`).toBeGreaterThan(20);
        for (const revision of entry.revisions) {
          expect(REVISIONS).toContain(revision);
          const set = await requirementSet(revision, leg);
          expect([...set.scored, ...set.notScored], `${leg} ${entry.scenario} is not run for ${revision}`).toContain(entry.scenario);
        }
      }
    }
  });
});
