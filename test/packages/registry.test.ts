import { createReadStream } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { create as createTar } from 'tar';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseInstallCode, publishToRegistry, resolveFromRegistries } from '../../src/packages/index.ts';
import { installCodeFor } from '../../src/packages/install-code.ts';
import { packFolder, unpackArchive } from '../../src/packages/archive.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost } from '../helpers/test-host.ts';
import { makeTempDir } from '../helpers/test-kernel.ts';
import { runCli } from '../helpers/run-cli.ts';
import { EXAMPLES, packageConfig } from './support.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let registry: string;
let http: Server;
let httpUrl: string;

beforeAll(async () => {
  http = createServer((request, response) => {
    const path = normalize(decodeURIComponent((request.url ?? '/').split('?')[0] ?? '/')).replace(/^\/+/, '');
    const file = join(registry, path);
    stat(file).then(
      (info) => (info.isFile() ? createReadStream(file).pipe(response.writeHead(200)) : response.writeHead(404).end()),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => http.close(() => resolve()));
});
beforeEach(async () => {
  dir = await makeTempDir('loom-registry-');
  registry = join(dir.path, 'registry');
});
afterEach(async () => {
  await dir.remove();
});

describe('install codes', () => {
  it('are Crockford base32: read case-insensitively, I and L as 1, O as 0; U and other letters refused with their position', () => {
    expect(parseInstallCode('agnt-7qk2-m4xd')).toEqual({ kind: 'AGNT', code: 'AGNT-7QK2-M4XD' });
    expect(parseInstallCode('SKIL-oIl0-ABCD').code).toBe('SKIL-0110-ABCD');
    expect(() => parseInstallCode('AGNT-7QU2-M4XD')).toThrow('"U" (character 8) is not Crockford base32');
    expect(() => parseInstallCode('PKG-1234-5678')).toThrow('is not an install code: expected AGNT-XXXX-XXXX');
    expect(() => parseInstallCode('AGNT-123-45678')).toThrow('is not an install code');
    expect(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0')).toMatch(/^AGNT-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    expect(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0')).toBe(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0'));
  });
});

describe('archives', () => {
  it('pack the same folder to the same bytes, and unpack them', async () => {
    const first = await packFolder(join(EXAMPLES, 'data-pipeline'));
    expect((await packFolder(join(EXAMPLES, 'data-pipeline'))).equals(first)).toBe(true);
    const root = await unpackArchive(first, dir.path);
    expect(await readFile(join(root, 'agent.json'), 'utf8')).toBe(await readFile(join(EXAMPLES, 'data-pipeline', 'agent.json'), 'utf8'));
  });

  it('refuse an entry that escapes the folder, and a symbolic link, extracting nothing', async () => {
    const evil = join(dir.path, 'evil');
    await writeFile(join(dir.path, 'outside.txt'), 'secret');
    const { mkdir, symlink } = await import('node:fs/promises');
    await mkdir(evil);
    await symlink('/etc/passwd', join(evil, 'link'));
    const chunks: Buffer[] = [];
    for await (const chunk of createTar({ gzip: true, cwd: evil }, ['link']) as AsyncIterable<Buffer>) chunks.push(chunk);
    const target = join(dir.path, 'target');
    await mkdir(target);
    await expect(unpackArchive(Buffer.concat(chunks), target)).rejects.toThrow('"link" is a SymbolicLink entry; only files and folders may be in a package');
    const escaping: Buffer[] = [];
    for await (const chunk of createTar({ gzip: true, cwd: join(dir.path, 'target'), preservePaths: true }, ['../outside.txt']) as AsyncIterable<Buffer>) escaping.push(chunk);
    await expect(unpackArchive(Buffer.concat(escaping), target)).rejects.toThrow('"../outside.txt" points outside the archive\'s folder');
    expect(await (await import('node:fs/promises')).readdir(target)).toEqual([]);
  });
});

describe('a registry', () => {
  it('publishes a package and a skill, and resolves them by code, by name and by name@version, from a folder and over HTTP', async () => {
    const published = await publishToRegistry({ registry, source: join(EXAMPLES, 'data-pipeline'), kind: 'agent', name: '@nebo/agents/data-pipeline', version: '1.0.0' });
    expect(published.code).toBe(installCodeFor('AGNT', '@nebo/agents/data-pipeline', '1.0.0'));
    const skill = await publishToRegistry({ registry, source: join(EXAMPLES, 'data-pipeline', 'skills', 'data-analyzer'), kind: 'skill', name: '@nebo/skills/data-analyzer', version: '1.0.0' });
    expect(skill.code).toMatch(/^SKIL-/);
    // Publishing the same bytes again changes nothing; other bytes under the same version are refused.
    expect(await publishToRegistry({ registry, source: join(EXAMPLES, 'data-pipeline'), kind: 'agent', name: '@nebo/agents/data-pipeline', version: '1.0.0' })).toEqual(published);
    await expect(publishToRegistry({ registry, source: join(EXAMPLES, 'chief-of-staff'), kind: 'agent', name: '@nebo/agents/data-pipeline', version: '1.0.0' })).rejects.toThrow('versions are immutable');

    for (const location of [registry, httpUrl]) {
      for (const reference of [published.code.toLowerCase(), '@nebo/agents/data-pipeline', '@nebo/agents/data-pipeline@1.0.0']) {
        const found = await resolveFromRegistries([location], reference);
        expect(found).toMatchObject({ kind: 'agent', name: '@nebo/agents/data-pipeline', version: '1.0.0', code: published.code, registry: location });
      }
    }
    await expect(resolveFromRegistries([registry, httpUrl], 'AGNT-0000-0000')).rejects.toThrow(`"AGNT-0000-0000" is in none of the registries searched: ${registry}, ${httpUrl}`);
    await expect(resolveFromRegistries([registry], 'AGNT-UUUU-0000')).rejects.toThrow('is not Crockford base32');
  });

  it('installs a package by code with its digest checked, and refuses a tampered archive with nothing installed', async () => {
    const published = await publishToRegistry({ registry, source: join(EXAMPLES, 'data-pipeline'), kind: 'agent', name: '@nebo/agents/data-pipeline', version: '1.0.0' });
    const host = await openTestHost(dir.path, packageConfig(server.url, { registries: [{ name: 'local', location: registry }] }));
    try {
      const archive = join(registry, published.archive);
      const original = await readFile(archive);
      await writeFile(archive, Buffer.concat([original, Buffer.from('tampered')]));
      await expect(host.packages.install(published.code)).rejects.toThrow(`the archive ${published.archive} of @nebo/agents/data-pipeline@1.0.0 does not match its digest (expected sha256 ${published.sha256}`);
      expect(host.kernel.list()).toEqual([]);

      await writeFile(archive, original);
      const view = await host.packages.install(published.code);
      expect(view).toMatchObject({ slug: 'data-pipeline', qualified_name: '@nebo/agents/data-pipeline', version: '1.0.0' });
      expect(view.source).toContain(published.code);
    } finally {
      await host.close();
    }
  });

  it('loom package publish prints the code; loom package install <code> --yes installs it', async () => {
    const home = join(dir.path, 'home');
    await runCli(home, ['init']);
    const config = `[scheduler]\ntimezone = "UTC"\n[[registries]]\nname = "local"\nlocation = "${registry}"\n[models.aliases.claude-sonnet]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${['slack-notifier'].map((name) => `[[mcp_servers]]\nname = "${name}"\n[mcp_servers.transport]\ntype = "stdio"\ncommand = "node"\n`).join('')}`;
    await writeFile(join(home, 'config.toml'), config);
    const publish = await runCli(home, ['package', 'publish', join(EXAMPLES, 'data-pipeline'), '--registry', registry]);
    expect(publish.stderr).toBe('');
    const code = /as (AGNT-\w{4}-\w{4})/.exec(publish.stdout)?.[1];
    expect(code).toBeDefined();
    const install = await runCli(home, ['package', 'install', code ?? '', '--yes']);
    expect(install.stderr).toContain('Package @nebo/agents/data-pipeline 1.0.0');
    expect(install.stdout).toMatch(/^Installed data-pipeline 1\.0\.0: agent "data-pipeline"/);
    expect(install.code).toBe(0);
    const bad = await runCli(home, ['package', 'install', 'AGNT-LOUD-0000', '--yes']);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('"U" (character 8) is not Crockford base32');
  });
});
