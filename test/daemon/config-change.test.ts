import { stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfigText, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, readDaemonFile, staleDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let daemon: RunningDaemon;
let home: ReturnType<typeof resolveLoomHome>;

beforeEach(async () => {
  dir = await makeTempDir('loom-config-change-');
  home = resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, dir.path);
  daemon = await startDaemon({ home, config: ConfigSchema.parse({}), env: {}, logger: createSilentLogger(), version: 'test', port: 0 });
});
afterEach(async () => {
  await daemon.stop();
  await dir.remove();
});

describe('whether config.toml changed since the daemon read it', () => {
  it('is told by what the file says, not by its time: a change stamped with the time of the version the daemon read is still a change', async () => {
    // A change the daemon follows alone ([default_model]): it records the file as current. Its
    // time is set to a whole second, which the file system keeps exactly.
    const stamp = Math.floor(Date.now() / 1000) - 60;
    await writeFile(home.configPath, '[default_model]\nprovider = "ollama"\nmodel = "llama3.2"\n');
    await utimes(home.configPath, stamp, stamp);
    await waitFor('the daemon to take the new default model', async () => (await readDaemonFile(home))?.configMtimeMs === stamp * 1000);
    expect(await staleDaemon(home)).toBeUndefined();
    // Then a setting it reads only at start, written within the same tick of the file system's
    // clock (as a quick second write is): the file's time is what it was.
    await writeFile(home.configPath, '[log]\nlevel = "debug"\n\n[default_model]\nprovider = "ollama"\nmodel = "llama3.2"\n');
    await utimes(home.configPath, stamp, stamp);
    expect((await stat(home.configPath)).mtimeMs).toBe(stamp * 1000);
    await waitFor('loom init and loom doctor to see a change the daemon cannot follow', async () => (await staleDaemon(home))?.pid === daemon.info.pid);
  });

  it('is told against the text the daemon was started with: a change written between its read and the start is a change', async () => {
    await daemon.stop();
    await writeFile(home.configPath, '[log]\nlevel = "warn"\n');
    const { config, text } = await loadConfigText(home);
    await writeFile(home.configPath, '[log]\nlevel = "debug"\n');
    daemon = await startDaemon({ home, config, configText: text, env: {}, logger: createSilentLogger(), version: 'test', port: 0 });
    expect((await staleDaemon(home))?.pid).toBe(daemon.info.pid);
  });
});
