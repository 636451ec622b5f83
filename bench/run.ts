// `npm run bench` runs every benchmark; `npm run bench -- <name> …` runs the named ones.
// Each prints one JSON object per line.
// Each benchmark's module is loaded when it runs, not before: what one loads (the AssemblyScript
// compiler's WebAssembly, which V8 keeps compiling on background threads; a browser driver) must
// not share the process, or its CPU, with another's measurement.
type Bench = () => Promise<Record<string, unknown>>;
const benchmarks: Record<string, Bench> = {
  spawn: async () => (await import('./spawn.ts')).spawnBench(),
  boot: async () => (await import('./boot.ts')).bootBench(),
  turn: async () => (await import('./turn.ts')).turnBench(),
  'tool-turn': async () => (await import('./turn.ts')).toolTurnBench(),
  resume: async () => (await import('./resume.ts')).resumeBench(),
  'turn-long-session': async () => (await import('./turn.ts')).longSessionTurnBench(),
  'http-turn': async () => (await import('./http.ts')).httpTurnBench(),
  'cold-start': async () => (await import('./http.ts')).coldStartBench(),
  'idle-rss': async () => (await import('./http.ts')).idleRssBench(),
  'a2a-task': async () => (await import('./a2a.ts')).a2aTaskBench(),
  'mcp-call': async () => (await import('./mcp.ts')).mcpCallBench(),
  packages: async () => (await import('./packages.ts')).packagesBench(),
  orchestration: async () => (await import('./orchestration.ts')).orchestrationBench(),
  forged: async () => (await import('./forged.ts')).forgedBench(),
  'sandbox-oom': async () => (await import('./sandbox-oom.ts')).sandboxOomBench(),
  modules: async () => (await import('./modules.ts')).modulesBench(),
  channels: async () => (await import('./channels.ts')).channelsBench(),
  cluster: async () => (await import('./cluster.ts')).clusterBench(),
  failover: async () => (await import('./failover.ts')).failoverBench(),
  postgres: async () => (await import('./cluster.ts')).postgresBench(),
  cost: async () => (await import('./cost.ts')).costBench(),
  'turn-telemetry': async () => (await import('./telemetry.ts')).turnTelemetryBench(),
  'cli-agent-list': async () => (await import('./cli.ts')).cliAgentListBench(),
  // Installs its peers (bench/peers/package.json) into bench/peers/node_modules the first time.
  peers: async () => (await import('./peers.ts')).peersBench(),
};

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !(name in benchmarks));
if (unknown.length > 0) {
  console.error(`unknown benchmark: ${unknown.join(', ')}; known: ${Object.keys(benchmarks).join(', ')}`);
  process.exit(2);
}
for (const name of requested.length === 0 ? Object.keys(benchmarks) : requested) {
  const bench = benchmarks[name];
  if (bench !== undefined) console.log(JSON.stringify({ ...(await bench()), node: process.version }));
}
// Done: what a benchmark loaded may keep timers running (the peers' frameworks refresh model
// catalogues and flush telemetry on intervals), which would keep the process alive.
process.exit(0);
