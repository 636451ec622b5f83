import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Baseline, compareWithBaseline, readBaseline, requirementSet, REVISIONS, runConformance, summarize } from './conformance-runner.ts';

/**
 * The official MCP conformance suite's client leg: the suite starts its own test servers on
 * localhost and runs test/mcp/conformance-client.ts (Loom's MCP client manager) against each,
 * once per requirement set, held against test/mcp/conformance-baseline.json.
 */
const CLIENT = fileURLToPath(new URL('./conformance-client.ts', import.meta.url));
// The suite splits the command on spaces.
const COMMAND = `${process.execPath} ${CLIENT}`;
let baseline: Baseline;

beforeAll(async () => {
  baseline = await readBaseline();
});

describe('the MCP conformance suite, client leg', () => {
  it('has a command the suite can run (no spaces in its paths)', () => {
    expect(COMMAND.split(' ')).toHaveLength(2);
  });

  it.each(REVISIONS)(
    'passes the %s requirement set but for the scenarios of the baseline, and the baseline holds no entry that passes',
    async (revision) => {
      const results = await runConformance(revision, { leg: 'client', command: COMMAND }, { scenarioTimeoutMs: 40_000 });
      const set = await requirementSet(revision, 'client');
      process.stdout.write(`${summarize(revision, 'client', results, set)}\n`);
      const { unexpected, stale, missing } = compareWithBaseline(revision, 'client', results, [...set.scored, ...set.notScored], baseline);
      expect({ unexpected, stale, missing }).toEqual({ unexpected: [], stale: [], missing: [] });
    },
    900_000,
  );
});
