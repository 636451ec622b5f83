import { createReadStream } from 'node:fs';
import { link, mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import { create as createTar, Header, type HeaderData, list as listTar } from 'tar';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PackageError } from '../../src/errors/index.ts';
import { packFolder, sha256Hex, unpackArchive } from '../../src/packages/archive.ts';
import { installCodeFor } from '../../src/packages/install-code.ts';
import { parseQualifiedName, publishToRegistry, resolveFromRegistries } from '../../src/packages/registry.ts';
import { openTestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { runCli } from '../support/run-cli.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { EXAMPLES, packageConfig } from './support.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
/** The registry folder of the current test, also served over HTTP at `httpUrl`. */
let registry: string;
let http: Server;
let httpUrl: string;

beforeAll(async () => {
  http = createServer((request, response) => {
    const path = normalize(decodeURIComponent((request.url ?? '/').split('?')[0] ?? '/')).replace(/^\/+/, '');
    if (path.startsWith('broken/')) {
      response.writeHead(500, 'Internal Server Error').end('down for maintenance');
      return;
    }
    const file = join(registry, path);
    stat(file).then(
      (info) => (info.isFile() ? createReadStream(file).pipe(response.writeHead(200)) : response.writeHead(404, 'Not Found').end()),
      () => response.writeHead(404, 'Not Found').end(),
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

/** Writes files (path → text) under `root`, making their folders. */
async function writeTree(root: string, files: Record<string, string>): Promise<string> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

/** Every file under `root` (path → text), and every folder (path → "<folder>"). */
async function readTree(root: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name).slice(root.length + 1);
    tree[path] = entry.isDirectory() ? '<folder>' : await readFile(join(root, path), 'utf8');
  }
  return tree;
}

/** A .tgz of the given entries, written with tar's Header API, for archives a packer would never make. */
function craftedArchive(entries: readonly (HeaderData & { body?: string })[]): Buffer {
  const blocks: Buffer[] = [];
  for (const { body = '', ...data } of entries) {
    const header = new Header({ mode: 0o644, mtime: new Date(0), size: Buffer.byteLength(body), ...data });
    header.encode();
    if (header.block === undefined) throw new Error(`cannot encode a header for ${data.path ?? ''}`);
    blocks.push(header.block);
    if (body !== '') blocks.push(Buffer.from(body), Buffer.alloc((512 - (Buffer.byteLength(body) % 512)) % 512));
  }
  return gzipSync(Buffer.concat([...blocks, Buffer.alloc(1024)]));
}

/** The entry paths of an archive, in the order it holds them, as `tar tzf` lists them. */
async function entriesOf(bytes: Buffer): Promise<string[]> {
  const paths: string[] = [];
  await pipeline(Readable.from([bytes]), listTar({ onReadEntry: (entry) => paths.push(entry.path) }));
  return paths;
}

/** A .tgz of what tar's own `create` makes of `paths` in `cwd` (gzipped by node:zlib, as packFolder does). */
async function tarOf(cwd: string, paths: string[], options: { preservePaths?: boolean } = {}): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of createTar({ cwd, ...options }, paths) as AsyncIterable<Buffer>) chunks.push(chunk);
  return gzipSync(Buffer.concat(chunks));
}

describe('packFolder() and unpackArchive()', () => {
  const files = {
    'AGENT.md': 'You are a tester.\n',
    'agent.json': '{}\n',
    'skills/notes/SKILL.md': '---\nname: notes\n---\n',
    'skills/notes/scripts/run.sh': 'echo hi\n',
  };

  it('round-trip a folder, leaving out node_modules and .git at any depth', async () => {
    const source = await writeTree(join(dir.path, 'source'), {
      ...files,
      'node_modules/x/index.js': 'x',
      '.git/HEAD': 'ref',
      'skills/notes/node_modules/y.js': 'y',
    });
    await mkdir(join(source, 'empty'));
    const target = join(dir.path, 'target');
    expect(await unpackArchive(await packFolder(source), target)).toBe(target);
    expect(await readTree(target)).toEqual({ ...files, empty: '<folder>', skills: '<folder>', 'skills/notes': '<folder>', 'skills/notes/scripts': '<folder>' });
  });

  it('pack the same files to the same bytes, whatever order and time they were written at', async () => {
    const sorted = ['AGENT.md', 'agent.json', 'skills/', 'skills/notes/', 'skills/notes/SKILL.md', 'skills/notes/scripts/', 'skills/notes/scripts/run.sh'];
    const first = await writeTree(join(dir.path, 'first'), files);
    const second = await writeTree(join(dir.path, 'second'), Object.fromEntries(Object.entries(files).reverse()));
    await utimes(join(second, 'AGENT.md'), new Date('2001-01-01'), new Date('2001-01-01'));
    const bytes = await packFolder(first);
    // Sorted by code unit, whatever order the disk lists them in.
    expect(await entriesOf(bytes)).toEqual(sorted);
    expect((await packFolder(first)).equals(bytes)).toBe(true);
    expect(sha256Hex(await packFolder(second))).toBe(sha256Hex(bytes));
  });

  it('packFolder() refuses a folder holding a symbolic link, and a missing folder', async () => {
    const source = await writeTree(join(dir.path, 'source'), files);
    await symlink('/etc/passwd', join(source, 'passwords'));
    await expect(packFolder(source)).rejects.toThrow(`cannot pack "${source}": "passwords" is a symbolic link; a package holds only files and folders`);
    await expect(packFolder(join(dir.path, 'nowhere'))).rejects.toThrow(`cannot pack "${join(dir.path, 'nowhere')}": it is not a folder`);
  });

  it('unpackArchive() returns the one top-level folder of an npm-style archive, and the destination otherwise', async () => {
    const npmStyle = await writeTree(join(dir.path, 'npm'), { 'package/agent.json': '{}', 'package/AGENT.md': 'hi' });
    expect(await unpackArchive(await packFolder(npmStyle), join(dir.path, 'a'))).toBe(join(dir.path, 'a', 'package'));
    const withFile = await writeTree(join(dir.path, 'mixed'), { 'package/agent.json': '{}', 'README.md': 'hi' });
    expect(await unpackArchive(await packFolder(withFile), join(dir.path, 'b'))).toBe(join(dir.path, 'b'));
    const oneFile = await writeTree(join(dir.path, 'single'), { 'agent.json': '{}' });
    expect(await unpackArchive(await packFolder(oneFile), join(dir.path, 'c'))).toBe(join(dir.path, 'c'));
  });

  it('unpackArchive() refuses an entry with a .. segment, extracting nothing', async () => {
    const target = join(dir.path, 'target');
    const escaping = craftedArchive([
      { path: 'agent.json', body: '{}' },
      { path: '../evil', body: 'pwned' },
    ]);
    await expect(unpackArchive(escaping, target)).rejects.toThrow('cannot unpack the archive: "../evil" points outside the archive\'s folder');
    const nested = craftedArchive([{ path: 'skills/../../evil', body: 'pwned' }]);
    await expect(unpackArchive(nested, target)).rejects.toThrow('"skills/../../evil" points outside');
    // tar's own create, told to keep the path as given.
    await writeFile(join(dir.path, 'outside.txt'), 'secret');
    await mkdir(join(dir.path, 'inside'));
    await expect(unpackArchive(await tarOf(join(dir.path, 'inside'), ['../outside.txt'], { preservePaths: true }), target)).rejects.toThrow(
      '"../outside.txt" points outside',
    );
    await expect(stat(join(dir.path, 'evil'))).rejects.toThrow('ENOENT');
    expect(await readdir(dir.path)).not.toContain('target');
  });

  it('unpackArchive() refuses an absolute path', async () => {
    await expect(unpackArchive(craftedArchive([{ path: '/tmp/evil', body: 'pwned' }]), join(dir.path, 'target'))).rejects.toThrow(
      'cannot unpack the archive: "/tmp/evil" is an absolute path',
    );
  });

  it('unpackArchive() refuses a symbolic link entry, extracting nothing', async () => {
    const crafted = await writeTree(join(dir.path, 'crafted'), { 'agent.json': '{}' });
    await symlink('/etc/passwd', join(crafted, 'link'));
    const target = join(dir.path, 'target');
    await expect(unpackArchive(await tarOf(crafted, ['agent.json', 'link']), target)).rejects.toThrow(
      'cannot unpack the archive: "link" is a SymbolicLink entry; only files and folders may be in a package',
    );
    await expect(unpackArchive(craftedArchive([{ path: 'skills', type: 'SymbolicLink', linkpath: '/root' }]), target)).rejects.toThrow(
      '"skills" is a SymbolicLink entry',
    );
    expect(await readdir(dir.path)).not.toContain('target');
  });

  it('unpackArchive() refuses a hard link entry and a device entry', async () => {
    // Written header by header: tar's own packing of a hard link could write after its stream ended, in rare timings.
    const hardLink = craftedArchive([
      { path: 'agent.json', type: 'File', body: '{}' },
      { path: 'copy.json', type: 'Link', linkpath: 'agent.json' },
    ]);
    await expect(unpackArchive(hardLink, join(dir.path, 'target'))).rejects.toThrow('"copy.json" is a Link entry; only files and folders may be in a package');
    await expect(unpackArchive(craftedArchive([{ path: 'tty', type: 'CharacterDevice', devmaj: 5, devmin: 0 }]), join(dir.path, 'target'))).rejects.toThrow(
      '"tty" is a CharacterDevice entry',
    );
  });

  it('packFolder() stores a hard-linked file as a plain file, so its archive unpacks', async () => {
    const source = await writeTree(join(dir.path, 'source'), { 'agent.json': '{}' });
    await link(join(source, 'agent.json'), join(source, 'copy.json'));
    const target = join(dir.path, 'target');
    await unpackArchive(await packFolder(source), target);
    expect(await readTree(target)).toEqual({ 'agent.json': '{}', 'copy.json': '{}' });
  });

  it('unpackArchive() refuses more entries or more bytes than allowed', async () => {
    const source = await writeTree(join(dir.path, 'source'), { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'x'.repeat(1000) });
    const bytes = await packFolder(source);
    await expect(unpackArchive(bytes, join(dir.path, 'one'), { maxEntries: 2 })).rejects.toThrow('cannot unpack the archive: it holds more than 2 entries');
    await expect(unpackArchive(bytes, join(dir.path, 'two'), { maxBytes: 500 })).rejects.toThrow(
      'cannot unpack the archive: it unpacks to more than 500 bytes',
    );
    // A gzip bomb: a few kilobytes that would decompress to megabytes.
    const bomb = craftedArchive([{ path: 'zeros', body: '\0'.repeat(5_000_000) }]);
    expect(bomb.length).toBeLessThan(10_000);
    await expect(unpackArchive(bomb, join(dir.path, 'three'), { maxBytes: 1_000_000, maxEntries: 10 })).rejects.toThrow(
      'it unpacks to more than 1000000 bytes',
    );
    expect(await readdir(dir.path)).toEqual(['source']);
  });

  it('unpackArchive() refuses a corrupt archive with a PackageError, not a stack', async () => {
    const good = await packFolder(await writeTree(join(dir.path, 'source'), files));
    const target = join(dir.path, 'target');
    await expect(unpackArchive(good.subarray(0, good.length - 20), target)).rejects.toThrow(PackageError);
    await expect(unpackArchive(good.subarray(0, good.length - 20), target)).rejects.toThrow('cannot unpack the archive: it is not a valid .tgz (');
    await expect(unpackArchive(Buffer.from('this is not an archive'.repeat(40)), target)).rejects.toThrow('cannot unpack the archive: it is not a valid .tgz');
    await expect(unpackArchive(gzipSync(Buffer.from('not tar either'.repeat(100))), target)).rejects.toThrow('it is not a valid .tgz');
    await expect(unpackArchive(new Uint8Array(0), target)).rejects.toThrow('it is not a valid .tgz');
  });
});

describe('parseQualifiedName()', () => {
  it('reads packages and skills, with and without a version', () => {
    expect(parseQualifiedName('@nebo/agents/chief-of-staff')).toEqual({
      kind: 'agent',
      org: 'nebo',
      name: 'chief-of-staff',
      qualified: '@nebo/agents/chief-of-staff',
    });
    expect(parseQualifiedName('@nebo/agents/chief-of-staff@1.2.0')).toEqual({
      kind: 'agent',
      org: 'nebo',
      name: 'chief-of-staff',
      qualified: '@nebo/agents/chief-of-staff',
      version: '1.2.0',
    });
    expect(parseQualifiedName('@acme-2/skills/note-taker@2.0.0-beta.1')).toMatchObject({
      kind: 'skill',
      org: 'acme-2',
      name: 'note-taker',
      qualified: '@acme-2/skills/note-taker',
      version: '2.0.0-beta.1',
    });
  });

  it('refuses anything else, saying what is expected', () => {
    for (const text of [
      'nebo/agents/x',
      '@Nebo/agents/x',
      '@nebo/tools/x',
      '@nebo/agents/x_y',
      '@nebo/agents/',
      '@nebo/agents/x@',
      '@nebo/agents/x/y',
      '@nebo/agents/x@../1',
    ]) {
      expect(() => parseQualifiedName(text)).toThrow(`"${text}" is not a qualified name: expected @org/agents/name or @org/skills/name`);
    }
  });
});

describe('a registry', () => {
  const source = join(EXAMPLES, 'data-pipeline');
  const name = '@nebo/agents/data-pipeline';
  const publish = (version = '1.0.0', from = source) => publishToRegistry({ registry, source: from, kind: 'agent', name, version });

  it('publishes a package and resolves it by code, by name and by name@version, from a folder and over HTTP', async () => {
    const published = await publish();
    expect(published).toEqual({
      code: installCodeFor('AGNT', name, '1.0.0'),
      archive: 'archives/agents/nebo/data-pipeline-1.0.0.tgz',
      sha256: sha256Hex(await readFile(join(registry, 'archives/agents/nebo/data-pipeline-1.0.0.tgz'))),
    });
    for (const location of [registry, httpUrl, httpUrl.slice(0, -1)]) {
      for (const reference of [published.code, published.code.toLowerCase().replace(/-/g, '').replace('agnt', 'agnt-'), name, `${name}@1.0.0`]) {
        const found = await resolveFromRegistries([location], reference);
        expect(found).toMatchObject({ kind: 'agent', name, version: '1.0.0', code: published.code, registry: location });
        expect(sha256Hex(found.bytes)).toBe(published.sha256);
      }
    }
    const unpacked = join(dir.path, 'unpacked');
    await unpackArchive((await resolveFromRegistries([httpUrl], published.code)).bytes, unpacked);
    expect(await readFile(join(unpacked, 'agent.json'), 'utf8')).toBe(await readFile(join(source, 'agent.json'), 'utf8'));
  });

  it('publishes a skill under a SKIL- code, and finds it in the second registry when the first lacks it', async () => {
    const other = join(dir.path, 'other');
    await publishToRegistry({
      registry: other,
      source: join(EXAMPLES, 'chief-of-staff'),
      kind: 'agent',
      name: '@nebo/agents/chief-of-staff',
      version: '1.0.0',
    });
    const skill = await publishToRegistry({
      registry,
      source: join(source, 'skills', 'data-analyzer'),
      kind: 'skill',
      name: '@nebo/skills/data-analyzer',
      version: '0.3.0',
    });
    expect(skill.code).toBe(installCodeFor('SKIL', '@nebo/skills/data-analyzer', '0.3.0'));
    expect(skill.archive).toBe('archives/skills/nebo/data-analyzer-0.3.0.tgz');
    expect(await resolveFromRegistries([other, httpUrl], '@nebo/skills/data-analyzer')).toMatchObject({
      kind: 'skill',
      version: '0.3.0',
      code: skill.code,
      registry: httpUrl,
    });
  });

  it('writes index.json in the documented format, latest being the highest version by number', async () => {
    for (const version of ['1.9.0', '1.10.0', '1.2.0']) await publish(version);
    const index = JSON.parse(await readFile(join(registry, 'index.json'), 'utf8')) as unknown;
    expect(index).toEqual({
      format: 1,
      entries: {
        [name]: {
          kind: 'agent',
          latest: '1.10.0',
          versions: Object.fromEntries(
            ['1.9.0', '1.10.0', '1.2.0'].map((version) => [
              version,
              {
                code: installCodeFor('AGNT', name, version),
                archive: `archives/agents/nebo/data-pipeline-${version}.tgz`,
                sha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
              },
            ]),
          ),
        },
      },
    });
    expect((await resolveFromRegistries([registry], name)).version).toBe('1.10.0');
    expect((await resolveFromRegistries([registry], `${name}@1.2.0`)).version).toBe('1.2.0');
    expect((await readdir(registry)).sort()).toEqual(['archives', 'index.json']);
  });

  it('publishing the same version again is a no-op with the same bytes and refused with other bytes', async () => {
    const published = await publish();
    const indexBefore = await readFile(join(registry, 'index.json'), 'utf8');
    expect(await publish()).toEqual(published);
    await expect(publish('1.0.0', join(EXAMPLES, 'chief-of-staff'))).rejects.toThrow(
      `cannot publish ${name}@1.0.0 to "${registry}": that version is published already with other contents (sha256 ${published.sha256}, now `,
    );
    await expect(publish('1.0.0', join(EXAMPLES, 'chief-of-staff'))).rejects.toThrow('versions are immutable, so publish a new version');
    expect(await readFile(join(registry, 'index.json'), 'utf8')).toBe(indexBefore);
    expect(sha256Hex(await readFile(join(registry, published.archive)))).toBe(published.sha256);
  });

  it('refuses to publish under a code another name or version already has', async () => {
    const code = installCodeFor('AGNT', name, '1.0.0');
    const sha256 = 'a'.repeat(64);
    await mkdir(registry, { recursive: true });
    await writeFile(
      join(registry, 'index.json'),
      JSON.stringify({
        format: 1,
        entries: {
          '@other/agents/clash': { kind: 'agent', latest: '3.0.0', versions: { '3.0.0': { code, archive: 'archives/agents/other/clash-3.0.0.tgz', sha256 } } },
        },
      }),
    );
    await expect(publish()).rejects.toThrow(
      `cannot publish ${name}@1.0.0 to "${registry}": its install code ${code} is taken by @other/agents/clash@3.0.0 in that registry`,
    );
    await expect(stat(join(registry, 'archives'))).rejects.toThrow('ENOENT');
  });

  it('refuses to publish a bad name, a name of the other kind, a bad version, or to a URL', async () => {
    await expect(publishToRegistry({ registry, source, kind: 'agent', name: 'data-pipeline', version: '1.0.0' })).rejects.toThrow(
      '"data-pipeline" is not a qualified name',
    );
    await expect(publishToRegistry({ registry, source, kind: 'agent', name: '@nebo/skills/data-pipeline', version: '1.0.0' })).rejects.toThrow(
      '"@nebo/skills/data-pipeline" names a skill, but a package is being published; use @nebo/agents/data-pipeline',
    );
    await expect(publish('../1')).rejects.toThrow('"../1" is not a version such as "1.0.0"');
    await expect(publishToRegistry({ registry: httpUrl, source, kind: 'agent', name, version: '1.0.0' })).rejects.toThrow(
      'publishing writes to a registry folder',
    );
    await expect(stat(registry)).rejects.toThrow('ENOENT');
  });

  it('refuses an archive changed after publishing, naming it and both digests, from a folder and over HTTP', async () => {
    const published = await publish();
    const archive = join(registry, published.archive);
    const tampered = Buffer.concat([await readFile(archive), Buffer.from('tampered')]);
    await writeFile(archive, tampered);
    for (const location of [registry, httpUrl]) {
      const attempt = resolveFromRegistries([location], published.code);
      await expect(attempt).rejects.toThrow(PackageError);
      await expect(attempt).rejects.toThrow(
        `cannot use ${name}@1.0.0 from registry "${location}": the archive ${published.archive} does not match its digest (expected sha256 ${published.sha256}, got ${sha256Hex(tampered)})`,
      );
    }
  });

  it('refuses an index that pairs a name and version with another code, plain http off this machine, and redirects', async () => {
    await publish();
    const index = JSON.parse(await readFile(join(registry, 'index.json'), 'utf8')) as {
      entries: Record<string, { versions: Record<string, { code: string }> }>;
    };
    const entry = index.entries[name]?.versions['1.0.0'];
    if (entry === undefined) throw new Error('the published version is missing from index.json');
    const real = entry.code;
    entry.code = 'AGNT-0000-0000';
    await writeFile(join(registry, 'index.json'), JSON.stringify(index));
    await expect(resolveFromRegistries([registry], name)).rejects.toThrow(
      `its index gives the install code AGNT-0000-0000, but that name and version have the code ${real}`,
    );

    const asked: string[] = [];
    const spy: typeof fetch = (input) => {
      asked.push(input instanceof URL ? input.href : typeof input === 'string' ? input : input.url);
      return Promise.resolve(new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/index.json' } }));
    };
    await expect(resolveFromRegistries(['http://registry.example.com/'], name, { fetch: spy })).rejects.toThrow(
      'plain http is accepted only on this machine (loopback); use https',
    );
    expect(asked).toEqual([]);
    await expect(resolveFromRegistries(['https://registry.example.com/'], name, { fetch: spy })).rejects.toThrow(
      'GET https://registry.example.com/index.json answered 302, a redirect to http://169.254.169.254/index.json; redirects are not followed',
    );
  });

  it('refuses a code or name found nowhere, naming it and the registries searched', async () => {
    await publish();
    const other = join(dir.path, 'other');
    await publishToRegistry({
      registry: other,
      source: join(EXAMPLES, 'chief-of-staff'),
      kind: 'agent',
      name: '@nebo/agents/chief-of-staff',
      version: '1.0.0',
    });
    await expect(resolveFromRegistries([registry, httpUrl, other], 'agnt-oooo-0000')).rejects.toThrow(
      `cannot find "AGNT-0000-0000" in the registries searched: "${registry}", "${httpUrl}", "${other}"`,
    );
    await expect(resolveFromRegistries([registry, other], '@nebo/agents/missing')).rejects.toThrow(
      `cannot find "@nebo/agents/missing" in the registries searched: "${registry}", "${other}"`,
    );
    await expect(resolveFromRegistries([registry], `${name}@2.0.0`)).rejects.toThrow(
      `cannot find "${name}@2.0.0" in the registries searched: "${registry}" ("${registry}" has ${name} in versions 1.0.0)`,
    );
    await expect(resolveFromRegistries([], name)).rejects.toThrow('in the registries searched: (none configured: add [[registries]] to config.toml)');
  });

  it('refuses a malformed code or reference before asking any registry', async () => {
    const asked: string[] = [];
    const spy: typeof fetch = (input, init) => {
      asked.push(input instanceof URL ? input.href : typeof input === 'string' ? input : input.url);
      return fetch(input, init);
    };
    await expect(resolveFromRegistries([httpUrl], 'AGNT-UUUU-0000', { fetch: spy })).rejects.toThrow(
      '"AGNT-UUUU-0000" is not an install code: "U" (character 6) is not Crockford base32',
    );
    await expect(resolveFromRegistries([httpUrl], 'SKIL-12-34', { fetch: spy })).rejects.toThrow('is not an install code');
    await expect(resolveFromRegistries([httpUrl], '@nebo/agents/Bad', { fetch: spy })).rejects.toThrow('"@nebo/agents/Bad" is not a qualified name');
    await expect(resolveFromRegistries([httpUrl], 'data-pipeline', { fetch: spy })).rejects.toThrow(
      '"data-pipeline" is neither an install code (AGNT-XXXX-XXXX, SKIL-XXXX-XXXX) nor a qualified name',
    );
    expect(asked).toEqual([]);
  });

  it('refuses a malformed index.json, naming the registry and the JSON path', async () => {
    await publish();
    const index = JSON.parse(await readFile(join(registry, 'index.json'), 'utf8')) as {
      entries: Record<string, { versions: Record<string, { sha256: string }> }>;
    };
    const entry = index.entries[name]?.versions['1.0.0'];
    if (entry === undefined) throw new Error('the published version is missing from index.json');
    entry.sha256 = 'not-a-digest';
    await writeFile(join(registry, 'index.json'), JSON.stringify(index));
    for (const location of [registry, httpUrl]) {
      await expect(resolveFromRegistries([location], name)).rejects.toThrow(
        `cannot read registry "${location}": index.json: entries."${name}".versions."1.0.0".sha256: expected 64 lowercase hex digits, got "not-a-digest"`,
      );
    }
    await writeFile(join(registry, 'index.json'), '{"format": 1, "entries": ');
    await expect(resolveFromRegistries([registry], name)).rejects.toThrow(`cannot read registry "${registry}": index.json is not valid JSON (`);
    await writeFile(
      join(registry, 'index.json'),
      JSON.stringify({
        format: 1,
        entries: {
          [name]: {
            kind: 'agent',
            latest: '1.0.0',
            versions: { '1.0.0': { code: 'AGNT-0000-0000', archive: 'archives/../../secrets.tgz', sha256: 'a'.repeat(64) } },
          },
        },
      }),
    );
    await expect(resolveFromRegistries([registry], name)).rejects.toThrow(`entries."${name}".versions."1.0.0".archive: expected a path inside the registry`);
    await expect(publish('1.1.0')).rejects.toThrow(`cannot read registry "${registry}": index.json: entries."${name}"`);
  });

  it('refuses a registry that cannot be read, naming the URL and its status or the missing file', async () => {
    await expect(resolveFromRegistries([`${httpUrl}broken/`], name)).rejects.toThrow(
      `cannot read registry "${httpUrl}broken/": GET ${httpUrl}broken/index.json answered 500 Internal Server Error`,
    );
    await expect(resolveFromRegistries([`${httpUrl}nothing-here`], name)).rejects.toThrow(`GET ${httpUrl}nothing-here/index.json answered 404 Not Found`);
    await expect(resolveFromRegistries([join(dir.path, 'nowhere')], name)).rejects.toThrow(
      `cannot read registry "${join(dir.path, 'nowhere')}": "${join(dir.path, 'nowhere', 'index.json')}" does not exist`,
    );
    const published = await publish();
    await rm(join(registry, published.archive));
    await expect(resolveFromRegistries([httpUrl], name)).rejects.toThrow(`GET ${httpUrl}${published.archive} answered 404 Not Found`);
  });

  it('installs a package by code with its digest checked, and refuses a tampered archive with nothing installed', async () => {
    const published = await publish();
    const host = await openTestHost(dir.path, packageConfig(server.url, { registries: [{ name: 'local', location: registry }] }));
    try {
      const archive = join(registry, published.archive);
      const original = await readFile(archive);
      await writeFile(archive, Buffer.concat([original, Buffer.from('tampered')]));
      await expect(host.packages.install(published.code)).rejects.toThrow(
        `the archive ${published.archive} does not match its digest (expected sha256 ${published.sha256}`,
      );
      expect(host.kernel.list()).toEqual([]);

      await writeFile(archive, original);
      const view = await host.packages.install(published.code);
      expect(view).toMatchObject({ slug: 'data-pipeline', qualified_name: name, version: '1.0.0' });
      expect(view.source).toContain(published.code);
    } finally {
      await host.close();
    }
  });

  it('loom package publish prints the code; loom package install <code> --yes installs it', async () => {
    const home = join(dir.path, 'home');
    await runCli(home, ['init']);
    const config = `[scheduler]\ntimezone = "UTC"\n[[registries]]\nname = "local"\nlocation = "${registry}"\n[models.aliases.claude-sonnet]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${['slack-notifier'].map((mcp) => `[[mcp_servers]]\nname = "${mcp}"\n[mcp_servers.transport]\ntype = "stdio"\ncommand = "node"\n`).join('')}`;
    await writeFile(join(home, 'config.toml'), config);
    const published = await runCli(home, ['package', 'publish', source, '--registry', registry]);
    expect(published.stderr).toBe('');
    const code = /as (AGNT-\w{4}-\w{4})/.exec(published.stdout)?.[1];
    expect(code).toBe(installCodeFor('AGNT', name, '1.0.0'));
    const install = await runCli(home, ['package', 'install', code ?? '', '--yes']);
    expect(install.stderr).toContain(`Package ${name} 1.0.0`);
    expect(install.stdout).toMatch(/^Installed data-pipeline 1\.0\.0: agent "data-pipeline"/);
    expect(install.code).toBe(0);
    const bad = await runCli(home, ['package', 'install', 'AGNT-LOUD-0000', '--yes']);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('"U" (character 8) is not Crockford base32');
  });
});
