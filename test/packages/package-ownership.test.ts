import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from './support.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let hosts: TestHost[];

beforeEach(async () => {
  dir = await makeTempDir('loom-package-ownership-');
  hosts = [];
});
afterEach(async () => {
  for (const host of hosts) await host.close();
  await dir.remove();
});

async function open(): Promise<TestHost> {
  const host = await openTestHost(dir.path, packageConfig(server.url), undefined, { runSchedules: true });
  hosts.push(host);
  return host;
}

/** Moves the fake clock forward a minute at a time, letting the runs started on the way finish. */
async function advanceMinutes(host: TestHost, minutes: number): Promise<void> {
  for (let minute = 0; minute < minutes; minute += 1) {
    await host.clock.advance(60_000);
    await host.packages.runtime.idle();
  }
}

/** Installs "payroll", a heartbeat every minute, and "boss", an agent that may spawn and kill a child "kid". */
async function installPayroll(host: TestHost): Promise<void> {
  await host.packages.install(
    await writePackage(dir.path, 'payroll', { workflows: { tick: bindingJson({ type: 'heartbeat', interval: '1m' }, [activityJson('work')]) } }),
  );
  await host.kernel.spawn(manifest('name = "boss"\n[capabilities]\ntools = ["agent_spawn", "agent_kill"]\nagent_spawn = true\nagent_kill = ["kid"]\n'));
}

/** A child of "boss" whose manifest claims the package "payroll". */
const claimant = (): ReturnType<typeof manifest> => manifest('name = "kid"\n[metadata]\npackage = "payroll"\n');

const statuses = async (host: TestHost): Promise<string[]> => (await host.packages.runs({ package: 'payroll' })).map((run) => run.status);

describe('a package belongs to the agent it was installed for', () => {
  it('killing another agent whose manifest says [metadata] package = "<slug>" does not stop the package, its heartbeat or its run in flight', async () => {
    const host = await open();
    await installPayroll(host);
    let release = (): void => undefined;
    server.script([{ text: 'paid', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    await host.clock.advance(60_000);
    await expect.poll(() => server.requests.length).toBe(1);

    await host.kernel.spawn(claimant(), { parent: 'boss' });
    await host.kernel.kill('kid');
    expect(host.packages.runtime.isActive('payroll')).toBe(true);
    release();
    await host.packages.runtime.idle();
    expect(await statuses(host)).toEqual(['completed']);

    server.script(Array.from({ length: 3 }, () => ({ text: 'paid' })));
    await advanceMinutes(host, 3);
    expect(await statuses(host)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(host.kernel.get('payroll').state).toBe('running');
  });

  it('spawning another agent whose manifest says [metadata] package = "<slug>" does not start a package whose own agent is suspended', async () => {
    const host = await open();
    await installPayroll(host);
    await host.kernel.suspend('payroll');
    expect(host.packages.runtime.isActive('payroll')).toBe(false);

    await host.kernel.spawn(claimant(), { parent: 'boss' });
    expect(host.packages.runtime.isActive('payroll')).toBe(false);
    await advanceMinutes(host, 3);
    expect(await statuses(host)).toEqual([]);
    expect(server.requests).toHaveLength(0);

    // Its own agent still starts it.
    await host.kernel.kill('kid');
    await host.kernel.resume('payroll');
    expect(host.packages.runtime.isActive('payroll')).toBe(true);
  });

  it('its own agent still starts and stops it: an update restarts it, suspend and kill stop it, a restart starts it', async () => {
    const host = await open();
    await installPayroll(host);
    const own = host.kernel.get('payroll').manifest;
    await host.kernel.update('payroll', { ...own, description: 'pays people' });
    expect(host.packages.runtime.isActive('payroll')).toBe(true);
    await host.kernel.suspend('payroll');
    expect(host.packages.runtime.isActive('payroll')).toBe(false);
    await host.kernel.resume('payroll');
    expect(host.packages.runtime.isActive('payroll')).toBe(true);
    await host.close();
    hosts = [];

    const second = await open();
    expect(second.packages.runtime.isActive('payroll')).toBe(true);
    await second.kernel.kill('payroll');
    expect(second.packages.runtime.isActive('payroll')).toBe(false);
  });
});
