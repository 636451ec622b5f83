import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, resolveLoomHome } from '../../src/config/index.ts';
import { startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, EXAMPLES, packageConfigToml, writePackage } from '../packages/support.ts';

// spec/04 "Skill References": skills are installed with the packages that name them, and by code
// (SKIL-XXXX-XXXX); `loom package validate` resolves them where an install would.

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let registry: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-skills-');
  home = join(dir.path, 'home');
  registry = join(dir.path, 'registry');
  await runCli(home, ['init']);
  await writeFile(join(home, 'config.toml'), packageConfigToml(model.url, { registries: [{ name: 'team', location: registry }] }));
});
afterEach(async () => {
  await dir.remove();
});

const loom = (args: string[]) => runCli(home, args, { env: TEST_KEYS });

async function writeSkill(name: string, options: { dependencies?: string[] } = {}): Promise<string> {
  const folder = join(dir.path, 'skills', name);
  await mkdir(folder, { recursive: true });
  const dependencies = options.dependencies === undefined ? [] : ['dependencies:', ...options.dependencies.map((dependency) => `  - "${dependency}"`)];
  await writeFile(
    join(folder, 'SKILL.md'),
    [
      '---',
      `name: ${name}`,
      `description: The ${name} skill.`,
      'metadata:',
      '  version: "1.2.0"',
      ...dependencies,
      '---',
      '',
      `Do what ${name} does.`,
      '',
    ].join('\n'),
  );
  return folder;
}

/** Publishes a skill with the CLI and returns the code it printed. */
async function publishSkill(name: string, folder: string): Promise<string> {
  const published = await loom(['package', 'publish', folder, '--skill', '--name', `@acme/skills/${name}`, '--registry', registry]);
  expect(published.code).toBe(0);
  const code = /Install it with: loom package install (SKIL-\S+)/.exec(published.stdout)?.[1];
  expect(code).toBeDefined();
  return code as string;
}

describe('skills by install code', () => {
  it('loom package install SKIL-… installs the skill publish printed the code of, with its dependencies', async () => {
    const dependency = await publishSkill('formatter', await writeSkill('formatter'));
    const code = await publishSkill('note-taker', await writeSkill('note-taker', { dependencies: ['@acme/skills/formatter'] }));

    const installed = await loom(['package', 'install', code]);
    expect(installed).toMatchObject({ code: 0, stderr: '' });
    expect(installed.stdout).toBe(
      `Installed skill @acme/skills/formatter@1.2.0 (from registry "${registry}" (${dependency})).\n` +
        `Installed skill @acme/skills/note-taker@1.2.0 (from registry "${registry}" (${code})).\n`,
    );
    const skillsDir = resolveLoomHome({ LOOM_HOME: home }, dir.path).skillsDir;
    expect(await readFile(join(skillsDir, 'acme', 'note-taker', '1.2.0', 'SKILL.md'), 'utf8')).toContain('Do what note-taker does.');
    expect(await readFile(join(skillsDir, 'acme', 'formatter', '1.2.0', 'SKILL.md'), 'utf8')).toContain('Do what formatter does.');

    // Installing it again finds the same files in place.
    expect((await loom(['package', 'install', code.toLowerCase()])).stdout).toContain('Already installed skill @acme/skills/note-taker@1.2.0');
  });

  it('with a daemon running, the install goes to it (POST /api/packages/skills)', async () => {
    const code = await publishSkill('formatter', await writeSkill('formatter'));
    const loomHome = resolveLoomHome({ LOOM_HOME: home }, dir.path);
    const daemon = await startDaemon({
      home: loomHome,
      config: await loadConfig(loomHome),
      env: TEST_KEYS,
      logger: createSilentLogger(),
      version: 'test',
      port: 0,
    });
    try {
      const installed = await loom(['package', 'install', code, '--json']);
      expect(JSON.parse(installed.stdout)).toEqual([
        {
          skill: '@acme/skills/formatter@1.2.0',
          origin: { kind: 'registry', registry, code, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown },
          created: true,
        },
      ]);
      // The route itself refuses a package's code, naming what it takes.
      const refused = await fetch(`${daemon.info.url}/api/packages/skills`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: 'AGNT-0000-0000' }),
      });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(await refused.json())).toContain("expected a skill's install code, SKIL-XXXX-XXXX");
    } finally {
      await daemon.stop();
    }
  });

  it('a SKIL code no registry lists is refused naming the registry looked in', async () => {
    await publishSkill('formatter', await writeSkill('formatter'));
    const refused = await loom(['package', 'install', 'SKIL-0000-0000']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('SKIL-0000-0000');
    expect(refused.stderr).toContain(registry);
  });
});

describe('loom package validate resolves skills', () => {
  it("calls spec/04's chief-of-staff without its skills/ folder invalid, naming each missing skill and where it looked", async () => {
    const folder = join(dir.path, 'chief-of-staff');
    await cp(join(EXAMPLES, 'chief-of-staff'), folder, { recursive: true });
    await rm(join(folder, 'skills'), { recursive: true });
    await publishSkill('formatter', await writeSkill('formatter'));

    const refused = await loom(['package', 'validate', folder]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('package "chief-of-staff" is not valid: 4 skills it names cannot be found:');
    for (const name of ['quick-research', 'web-scraper', 'note-taker', 'report-writer']) {
      expect(refused.stderr).toContain(
        `cannot find skill "@nebo/skills/${name}": not in the package's skills/ folder ("${join(folder, 'skills', name)}"), not installed ("${join(resolveLoomHome({ LOOM_HOME: home }, dir.path).skillsDir, 'nebo', name)}")`,
      );
    }
    expect(refused.stdout).toBe('');
  });

  it('passes once a skill the package names is installed by its code', async () => {
    const code = await publishSkill('note-taker', await writeSkill('note-taker'));
    const folder = await writePackage(dir.path, 'notes', {
      skills: ['@acme/skills/note-taker'],
      workflows: { job: bindingJson({ type: 'manual' }, [activityJson('a', { skills: ['@acme/skills/note-taker'] })]) },
    });
    // Only the registry has it: validate finds it there, as install would.
    expect((await loom(['package', 'validate', folder])).stdout).toContain('notes is valid.');
    await writeFile(join(home, 'config.toml'), packageConfigToml(model.url));
    const missing = await loom(['package', 'validate', folder]);
    expect(missing.stderr).toContain('a skill it names cannot be found');
    expect(missing.stderr).toContain('and config.toml lists no [[registries]]');

    await writeFile(join(home, 'config.toml'), packageConfigToml(model.url, { registries: [{ name: 'team', location: registry }] }));
    expect((await loom(['package', 'install', code])).code).toBe(0);
    await writeFile(join(home, 'config.toml'), packageConfigToml(model.url));
    expect((await loom(['package', 'validate', folder])).stdout).toContain('notes is valid.');
  });
});
