import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type Baseline, compareWithBaseline, readBaseline, requirementSet, REVISIONS, runConformance, summarize } from './conformance-runner.ts';
import { agentManifest, type McpHttpServer, startMcpHttpServer } from './server-harness.ts';

/**
 * The official MCP conformance suite's server leg against the daemon's `/mcp` (the real HTTP app,
 * on 127.0.0.1), once per requirement set, held against test/mcp/conformance-baseline.json.
 */
const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer;
let baseline: Baseline;

beforeAll(async () => {
  dir = await makeTempDir('loom-mcp-conformance-server-');
  served = await startMcpHttpServer(dir.path);
  await served.host.kernel.spawn(agentManifest('helper', model.url, 'Answers questions'));
  await served.host.kernel.spawn(agentManifest('code-reviewer', model.url, 'Reviews code changes'));
  baseline = await readBaseline();
});

afterAll(async () => {
  await served.close();
  await dir.remove();
});

describe('the MCP conformance suite, server leg', () => {
  it.each(REVISIONS)(
    'passes the %s requirement set but for the scenarios of the baseline, and the baseline holds no entry that passes',
    async (revision) => {
      const results = await runConformance(revision, { leg: 'server', url: `${served.url}/mcp` }, { scenarioTimeoutMs: 20_000 });
      const set = await requirementSet(revision, 'server');
      process.stdout.write(`${summarize(revision, 'server', results, set)}\n`);
      const { unexpected, stale, missing } = compareWithBaseline(revision, 'server', results, [...set.scored, ...set.notScored], baseline);
      expect({ unexpected, stale, missing }).toEqual({ unexpected: [], stale: [], missing: [] });
    },
    900_000,
  );
});
