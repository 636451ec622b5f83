import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome } from '../src/config/index.ts';
import { openHost } from '../src/host/index.ts';
import { createUuidGenerator, type PackageEvent } from '../src/kernel/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { createPackageInstaller, createPackageRuntime, type PackageEnvironment } from '../src/packages/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { startDaemonProcess } from './http.ts';
import { procStat } from './proc.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const PACKAGES = 100;
const BINDINGS_PER_PACKAGE = 10;
const IDLE_WINDOW_S = 20;
const CHAIN_RUNS = 300;

const activity = (id: string) => ({ id, intent: `Do ${id}`, model: 'bench', token_budget: { max: 100_000 }, on_error: { retry: 0, fallback: 'Abort' } });
const binding = (trigger: Record<string, unknown>, emit?: string) => ({
  trigger,
  description: 'bench',
  activities: [activity('work')],
  budget: { total_per_run: 100_000, cost_estimate: '~$0' },
  ...(emit === undefined ? {} : { emit }),
});

async function writePackage(root: string, slug: string, workflows: Record<string, unknown>): Promise<string> {
  const folder = join(root, slug);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'AGENT.md'), `You are ${slug}.\n`);
  await writeFile(join(folder, 'agent.json'), JSON.stringify({ workflows }));
  return folder;
}

/** CPU seconds (user + system) the process has used, from /proc. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = await procStat(pid);
  if (fields === undefined) throw new Error(`process ${pid} is gone`);
  // Fields 14 and 15 of stat (utime, stime), in clock ticks of 1/100 s on Linux.
  return ((fields[11] ?? Number.NaN) + (fields[12] ?? Number.NaN)) / 100;
}

/**
 * An idle daemon with 1,000 installed heartbeat bindings (100 packages of 10): every 10 s each
 * binding's timer wakes and finds itself outside its window, so nothing runs. CPU over 20 s.
 */
async function idleCpu(): Promise<Record<string, unknown>> {
  const home = await mkdtemp(join(tmpdir(), 'loom-bench-packages-'));
  try {
    const hour = new Date().getUTCHours();
    const window = `${String((hour + 3) % 24).padStart(2, '0')}:00-${String((hour + 4) % 24).padStart(2, '0')}:00`;
    const configText = `[scheduler]\ntimezone = "UTC"\n[models.aliases.bench]\nprovider = "ollama"\nmodel = "llama3.2"\n`;
    const loomHome = resolveLoomHome({ LOOM_HOME: home }, home);
    await mkdir(home, { recursive: true });
    await writeFile(loomHome.configPath, configText);
    const host = await openHost({
      home: loomHome,
      config: ConfigSchema.parse({ scheduler: { timezone: 'UTC' }, models: { aliases: { bench: { provider: 'ollama', model: 'llama3.2' } } } }),
      env: {},
      logger: createSilentLogger(),
    });
    const sources = join(home, 'sources');
    for (let index = 0; index < PACKAGES; index += 1) {
      const workflows = Object.fromEntries(
        Array.from({ length: BINDINGS_PER_PACKAGE }, (_, at) => [`beat-${at}`, binding({ type: 'heartbeat', interval: '10s', window })]),
      );
      await host.packages.install(await writePackage(sources, `idle-${index}`, workflows));
    }
    await host.close();
    const daemon = await startDaemonProcess(home);
    try {
      const packages = (await (await fetch(`${daemon.url}/api/packages`)).json()) as { active: boolean; bindings: unknown[] }[];
      await delay(3_000);
      const before = await cpuSeconds(daemon.pid);
      await delay(IDLE_WINDOW_S * 1000);
      const used = (await cpuSeconds(daemon.pid)) - before;
      return {
        bench: 'packages-idle-cpu',
        bindings: packages.reduce((total, pkg) => total + pkg.bindings.length, 0),
        active_packages: packages.filter((pkg) => pkg.active).length,
        timer_wakeups_per_s: round((PACKAGES * BINDINGS_PER_PACKAGE) / 10),
        window_s: IDLE_WINDOW_S,
        cpu_percent_of_core: round((used / IDLE_WINDOW_S) * 100),
        target_percent: 1,
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** From a binding's emit to the first model call of the activity it fires downstream (in process, an instant model). */
async function emitLatency(): Promise<Record<string, unknown>> {
  const calls: number[] = [];
  const instant = createInstantModel();
  const model = {
    ...instant,
    doGenerate: (options: Parameters<typeof instant.doGenerate>[0]) => (calls.push(performance.now()), instant.doGenerate(options)),
    doStream: (options: Parameters<typeof instant.doStream>[0]) => (calls.push(performance.now()), instant.doStream(options)),
  };
  const bench = await openInstantBenchKernel(model);
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-chain-'));
  try {
    const environment: PackageEnvironment = { aliases: { bench: { provider: 'openai', model: 'instant' } }, mcpServers: [], userTimezone: 'UTC' };
    let emittedAt = 0;
    const kernel = {
      runTask: bench.kernel.runTask.bind(bench.kernel),
      runAgentTool: bench.kernel.runAgentTool.bind(bench.kernel),
      publish: (event: PackageEvent) => {
        if (event.type === 'package-emit') emittedAt = performance.now();
        return bench.kernel.publish(event);
      },
    };
    const clock = createSystemClock();
    const runtime = createPackageRuntime({ kernel, store: bench.store, clock, ids: createUuidGenerator(), logger: createSilentLogger(), environment });
    const installer = createPackageInstaller({
      kernel: bench.kernel,
      store: bench.store,
      runtime,
      clock,
      environment,
      registries: [],
      packagesDir: join(dir, 'agents'),
      skillsDir: join(dir, 'skills'),
    });
    await installer.install(await writePackage(dir, 'upstream', { produce: binding({ type: 'manual' }, 'ready') }), { confirm: () => true });
    await installer.install(await writePackage(dir, 'downstream', { consume: binding({ type: 'event', sources: ['upstream.ready'] }) }), {
      confirm: () => true,
    });
    const latencies: number[] = [];
    for (let index = 0; index < CHAIN_RUNS; index += 1) {
      calls.length = 0;
      await runtime.run('upstream', 'produce');
      await runtime.idle();
      const downstream = calls.find((at) => at >= emittedAt);
      if (downstream !== undefined && index >= 20) latencies.push(downstream - emittedAt);
    }
    await runtime.shutdown();
    return { bench: 'packages-emit-latency', ...summarize(latencies), target_p50_ms: 2 };
  } finally {
    await bench.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `npm run bench -- packages`: idle CPU with 1,000 heartbeat bindings, and emit-to-model-call latency. */
export async function packagesBench(): Promise<Record<string, unknown>> {
  const latency = await emitLatency();
  const idle = await idleCpu();
  return { bench: 'packages', emit_latency: latency, idle_cpu: idle };
}
