// `npm run bench` runs every benchmark; `npm run bench -- <name> …` runs the named ones.
// Each prints one JSON object per line.
import { a2aTaskBench } from './a2a.ts';
import { bootBench } from './boot.ts';
import { channelsBench } from './channels.ts';
import { clusterBench } from './cluster.ts';
import { coldStartBench, httpTurnBench, idleRssBench } from './http.ts';
import { forgedBench } from './forged.ts';
import { mcpCallBench } from './mcp.ts';
import { modulesBench } from './modules.ts';
import { orchestrationBench } from './orchestration.ts';
import { packagesBench } from './packages.ts';
import { spawnBench } from './spawn.ts';
import { longSessionTurnBench, toolTurnBench, turnBench } from './turn.ts';

const benchmarks: Record<string, () => Promise<Record<string, unknown>>> = {
  spawn: spawnBench,
  boot: bootBench,
  turn: turnBench,
  'tool-turn': toolTurnBench,
  'turn-long-session': longSessionTurnBench,
  'http-turn': httpTurnBench,
  'cold-start': coldStartBench,
  'idle-rss': idleRssBench,
  'a2a-task': a2aTaskBench,
  'mcp-call': mcpCallBench,
  packages: packagesBench,
  orchestration: orchestrationBench,
  forged: forgedBench,
  modules: modulesBench,
  channels: channelsBench,
  cluster: clusterBench,
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
