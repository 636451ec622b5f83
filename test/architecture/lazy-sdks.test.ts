import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { useDaemonHome } from '../support/daemon-process.ts';
import { tellerHome } from '../support/teller-home.ts';

/** The hook that makes the daemon write down every module it loads. */
const RECORDER = pathToFileURL(join(import.meta.dirname, '../support/record-loaded-modules.ts')).href;

/** The libraries the daemon loads on first use only, by the part of their module URL that names them. */
const MCP_SDK = '/node_modules/@modelcontextprotocol/';
const A2A_SDK = '/node_modules/@a2a-js/sdk/';
const OPENTELEMETRY_SDK = '/node_modules/@opentelemetry/sdk-trace-base/';

const daemons = useDaemonHome('loom-lazy-sdks-');

/**
 * The entries that src/ imports past the MCP, A2A and telemetry indexes (the entries of
 * test/architecture/layering.test.ts) exist so that these SDKs load when first used; this test
 * shows that they do, on a real daemon that writes down each module as it loads it.
 */
describe('the daemon loads the MCP and A2A SDKs on first use', () => {
  it('starts without them, loads the MCP SDK on the first /mcp request and the A2A SDK on the first A2A request', async () => {
    // A model at an address nothing answers: no turn runs here.
    await tellerHome(daemons.dir, 'http://127.0.0.1:9/v1');
    const log = join(daemons.dir, 'modules.log');
    const daemon = await daemons.start({ env: { NODE_OPTIONS: `--import=${RECORDER}`, LOOM_TEST_MODULE_LOG: log, LOOM_FROM_SOURCES: '1' } });
    const loaded = async (): Promise<string[]> => (await readFile(log, 'utf8')).split('\n').filter((url) => url !== '');
    const from = async (library: string): Promise<string[]> => (await loaded()).filter((url) => url.includes(library));

    // The record is of this daemon's own sources: the hook ran.
    expect(await loaded()).toEqual(expect.arrayContaining([expect.stringMatching(/\/src\/http\/create-http-app\.ts$/) as string]));
    expect(await from(MCP_SDK)).toEqual([]);
    expect(await from(A2A_SDK)).toEqual([]);
    expect(await from(OPENTELEMETRY_SDK)).toEqual([]);

    const mcp = new Client({ name: 'lazy-sdks-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${daemon.url}/mcp`)));
    try {
      expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain('loom_agent_teller');
    } finally {
      await mcp.close();
    }
    expect(await from(`${MCP_SDK}server/`)).not.toEqual([]);
    expect(await from(A2A_SDK)).toEqual([]);

    const a2a = await new ClientFactory().createFromUrl(`${daemon.url}/a2a/teller/.well-known/agent-card.json`, '');
    expect((await a2a.getAgentCard()).name).toBe('teller');
    expect(await from(A2A_SDK)).not.toEqual([]);
    // No OTLP endpoint is set: tracing never starts.
    expect(await from(OPENTELEMETRY_SDK)).toEqual([]);
  }, 60_000);
});
