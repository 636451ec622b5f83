/**
 * The layering of src/ written down as data, read by test/architecture/layering.test.ts (every
 * import) and by eslint.config.js (static imports, as `no-restricted-imports`): one list, two checks.
 * Plain data and erasable types only, so that Node loads it as it is for the lint config.
 */
import type { LayeringRules } from './layering-check.ts';

/**
 * The floors of `src/`, from the bottom up (DESIGN.md's picture, docs/architecture.md): a folder
 * imports only folders on its own floor or below, and no two folders import each other.
 */
export const FLOORS: LayeringRules['floors'] = [
  // 0: the interfaces everything is written against, and the API's shapes (imports nothing).
  ['contracts', 'wire'],
  // 1: errors, time, checking values, logs.
  ['errors', 'clock', 'validation', 'logging'],
  // 2: what an agent may do.
  ['capabilities'],
  // 3: what an agent is (the manifest holds capabilities) and where things are kept.
  ['manifest', 'store'],
  // 4: the model layer, the built-in tools, the config (which names models' prices), callers.
  ['models', 'tools', 'config', 'access'],
  // 5: the agent loop and the tool runner.
  ['runtime'],
  // 6: agent modules: code agents, the turns of built-in modules, forged tools.
  ['code-modules', 'agent-types', 'forged-tools'],
  // 7: the kernel.
  ['kernel'],
  // 8: subsystems on the kernel: schedules, packages, channels, the cluster, metrics and traces.
  ['scheduler', 'packages', 'channels', 'cluster', 'telemetry'],
  // 9: the protocols both ways (MCP and A2A clients for agents, servers for peers).
  ['mcp', 'a2a'],
  // 10: the composition root, and the HTTP door (neither imports the other).
  ['host', 'http'],
  // 11: the daemon: a host and its HTTP server.
  ['daemon'],
  // 12: the `loom` command.
  ['cli'],
];

/** Files other folders import by path, not through their folder's index. */
export const ENTRIES: LayeringRules['entries'] = {
  // Lazy loading: the folder's index loads an SDK that the daemon loads only on first use
  // (test/architecture/lazy-sdks.test.ts shows the daemon boots without them).
  'src/a2a/external-agents.ts': 'the a2a_send tool and the external agents list without the A2A SDK',
  'src/a2a/public-paths.ts': 'which A2A paths need no key, for the HTTP guard, without the A2A SDK',
  'src/a2a/unfinished-tasks.ts': 'whether tasks wait for recovery at start, without the A2A SDK',
  'src/a2a/a2a-client.ts': '`loom a2a` imports the client (and the SDK) when a command uses it',
  'src/mcp/server/agent-tools.ts': 'the agent tools POST /api/agents and the CLI describe, without the MCP SDK',
  'src/mcp/server/index.ts': 'the MCP server, imported on the first /mcp request or by `loom mcp`',
  'src/mcp/client/index.ts': 'the MCP client manager, imported when a host connects MCP servers or by `loom mcp login`',
  'src/telemetry/tracing.ts': 'the OpenTelemetry SDK, imported by the daemon only when an OTLP endpoint is set',
  'src/telemetry/tracing-endpoint.ts': 'reads the OTLP endpoint without loading the OpenTelemetry SDK',
  'src/telemetry/loom-metrics.ts': 'prom-client, imported by the daemon when it starts serving (it costs each CLI command ~70 ms)',
  // The sandbox process loads only this file of validation/, not Ajv and zod.
  'src/validation/json-depth.ts': 'imports nothing; the sandbox process measures depth without loading Ajv and zod',
  // A development peer (`loom demo`, `loom model serve`), not part of the model layer's surface.
  'src/models/scripted-model-server.ts': 'the scripted model server is a peer for development, kept out of the models index',
};

/** Files that stand below their folder: they import nothing of Loom, and lower floors use them. */
export const LEAVES: LayeringRules['leaves'] = {
  'src/config/installation.ts': {
    floor: 1,
    why: 'finds files in the installation (decision 0031); validation, the sandbox and code modules need it without the config schema',
  },
  'src/config/daemon-build.ts': { floor: 1, why: 'which daemon bin/loom.js starts, read before anything else loads' },
  'src/telemetry/spans.ts': { floor: 1, why: 'the light half of telemetry (only @opentelemetry/api): the runtime and the kernel open spans with it' },
};

/**
 * Arrows that break the floors or close a cycle today, each to be removed by the change named.
 * The test fails when one is no longer needed, so this list only shrinks.
 */
export const EXCEPTIONS: LayeringRules['exceptions'] = {};

/** What the kernel and the runtime may import from Node: computation only, no outside resource. */
export const NODE_FREE: LayeringRules['nodeFree'] = {
  folders: ['kernel', 'runtime'],
  allowed: {
    'node:crypto': 'hashes and UUIDs (createHash, randomUUID): computation, no resource',
    'node:util': 'isDeepStrictEqual: computation, no resource',
    'node:path': 'path strings (the taint tracker): no file is touched',
    'node:path/posix': 'path strings (child confinement): no file is touched',
  },
};

/** The rules of src/, checked by test/architecture/layering.test.ts and, for static imports, by eslint.config.js. */
export const LAYERING: LayeringRules = { floors: FLOORS, entries: ENTRIES, leaves: LEAVES, exceptions: EXCEPTIONS, nodeFree: NODE_FREE };
