/**
 * Builds the daemon into `dist/daemon/` (run by `npm run build`, and so by `npm install`): Loom's
 * sources with the libraries a daemon loads at start, in a few chunks instead of ~500 modules, so
 * that a daemon starts sooner and holds less (decision 0031). `bin/loom.js` runs the build only
 * while every file it was built from is unchanged; the sources stay runnable as they are.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, relative, sep } from 'node:path';
import { build, type Plugin } from 'rolldown';
import { BUILD_DIR, BUILD_RECORD, type BuildRecord, type BuildSource, readBuildRecord, SOURCE_ENTRY } from '../src/config/daemon-build.ts';
import { INSTALL_DIR } from '../src/config/installation.ts';

const ENTRY = join(INSTALL_DIR, ...SOURCE_ENTRY);

/**
 * The libraries every daemon loads at start, bundled in with Loom's code with all they import. Any
 * other library that imports one of them is bundled too (see `inlinedPackages`), so that no library
 * is loaded twice (once bundled, once from node_modules) with two sets of classes and registries,
 * but for those in MAY_LOAD_TWICE. prom-client (the metrics) and @opentelemetry/api (the spans'
 * no-op tracer while tracing is off) are 75 CommonJS files between them: loaded from
 * node_modules, each resolved, read and wrapped at every start, they took ~20 ms of it.
 */
const LOADED_AT_START = ['zod', 'hono', '@hono/node-server', 'commander', 'smol-toml', 'croner', 'pino', 'prom-client', '@opentelemetry/api'];

/**
 * Bundled libraries that other libraries may also load, as they are, from node_modules: nothing
 * passes between the two copies. imapflow (the email channel) logs through a pino of its own;
 * pino-pretty (loaded by name when the daemon prints for a terminal) only formats lines, and never
 * writes through the sonic-boom, exit hooks or transport helpers it imports; pgpass splits its own
 * streams with split2; mailauth (the email channel's DKIM check) declares commander for its own
 * command-line tool, which the library Loom imports never loads.
 */
const MAY_LOAD_TWICE = ['pino', 'sonic-boom', 'on-exit-leak-free', 'pino-abstract-transport', 'split2', 'commander'];

/**
 * Libraries that cannot be bundled: a native addon, and files loaded from beside the library's own
 * at run time. (pino's thread-stream, bundled with it, finds its worker that way too, but only for a
 * pino transport, which Loom never starts: its log streams are in-process, src/logging/.)
 */
const NEVER_BUNDLED = ['isolated-vm', 'discord.js', '@a2a-js/sdk', 'express'];

interface PackageJson {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function readPackageJson(path: string): PackageJson {
  return JSON.parse(readFileSync(path, 'utf8')) as PackageJson;
}

/** An installed library's package.json; undefined for an optional one not installed. */
function installedPackageJson(name: string): PackageJson | undefined {
  try {
    return readPackageJson(join(INSTALL_DIR, 'node_modules', name, 'package.json'));
  } catch {
    return undefined;
  }
}

const dependenciesOf = (manifest: PackageJson): string[] =>
  Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies, ...manifest.peerDependencies });

/**
 * LOADED_AT_START with everything it imports and, to a fixed point, every library of the daemon's
 * dependency tree that imports a library in the set (one in MAY_LOAD_TWICE excepted).
 */
function inlinedPackages(): Set<string> {
  const own = readPackageJson(join(INSTALL_DIR, 'package.json'));
  const tree = new Map<string, string[]>();
  const pending = Object.keys(own.dependencies ?? {});
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (tree.has(name)) continue;
    const manifest = installedPackageJson(name);
    if (manifest === undefined) continue;
    tree.set(name, dependenciesOf(manifest));
    pending.push(...dependenciesOf(manifest));
  }
  const inlined = new Set<string>();
  const atStart = [...LOADED_AT_START];
  for (let name = atStart.pop(); name !== undefined; name = atStart.pop()) {
    const dependencies = tree.get(name);
    if (inlined.has(name) || dependencies === undefined) continue;
    inlined.add(name);
    atStart.push(...dependencies);
  }
  const sharedWith = (dependency: string): boolean => inlined.has(dependency) && !MAY_LOAD_TWICE.includes(dependency);
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, dependencies] of tree) {
      if (inlined.has(name) || !dependencies.some(sharedWith)) continue;
      if (NEVER_BUNDLED.includes(name))
        throw new Error(`build: ${name} imports a bundled library (${dependencies.filter(sharedWith).join(', ')}) but cannot be bundled itself`);
      inlined.add(name);
      grew = true;
    }
  }
  return inlined;
}

const packageName = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/**
 * Leaves every library outside `inlined` to Node, imported by name from the built chunks, after
 * checking that the name finds the same files from `dist/daemon/` as from where it is imported.
 */
function externalLibraries(inlined: ReadonlySet<string>): Plugin {
  return {
    name: 'loom-external-libraries',
    async resolveId(specifier, importer) {
      if (isBuiltin(specifier)) return { id: specifier, external: true };
      if (specifier.startsWith('.') || specifier.startsWith('/') || importer === undefined || inlined.has(packageName(specifier))) return null;
      const here = await this.resolve(specifier, importer, { skipSelf: true });
      const there = await this.resolve(specifier, ENTRY, { skipSelf: true });
      // Unresolved from both: an optional library not installed, which its importer tries and forgoes.
      if (here !== null && here.id !== there?.id) {
        const found = there === null ? 'nothing' : relative(INSTALL_DIR, there.id);
        throw new Error(
          `build: ${specifier} (imported by ${relative(INSTALL_DIR, importer)}) finds ${found} from dist/daemon/ instead of ${relative(INSTALL_DIR, here.id)}`,
        );
      }
      return { id: specifier, external: true };
    },
  };
}

/** A source as the build read it. */
function sourceOf(id: string): BuildSource {
  const stats = statSync(id);
  return { path: relative(INSTALL_DIR, id).split(sep).join('/'), mtime_ms: stats.mtimeMs, size: stats.size };
}

/**
 * Notes every file of the installation the build reads, when it reads it: its time and size are
 * what `daemonEntry` compares (a file changed while the build ran is recorded as it was before).
 */
function recordSources(sources: Map<string, BuildSource>): Plugin {
  return {
    name: 'loom-record-sources',
    load(id) {
      const path = relative(INSTALL_DIR, id);
      if (!id.startsWith('\0') && !path.startsWith('..') && !path.startsWith(`node_modules${sep}`) && !sources.has(id)) sources.set(id, sourceOf(id));
      return null;
    },
  };
}

/** Builds the daemon into `outDir` and returns what it recorded there. */
export async function buildDaemon(outDir = join(INSTALL_DIR, ...BUILD_DIR)): Promise<BuildRecord> {
  const builtAt = Date.now();
  const inlined = inlinedPackages();
  const sources = new Map<string, BuildSource>();
  for (const file of ['package.json', 'package-lock.json']) {
    if (existsSync(join(INSTALL_DIR, file))) sources.set(join(INSTALL_DIR, file), sourceOf(join(INSTALL_DIR, file)));
  }
  const previousFiles = readBuildRecord(outDir)?.files;
  const previous = Array.isArray(previousFiles) ? previousFiles : [];
  const output = await build({
    input: { main: ENTRY },
    platform: 'node',
    // As Node runs the sources: types stripped, nothing else of tsconfig.json applied.
    tsconfig: false,
    plugins: [recordSources(sources), externalLibraries(inlined)],
    logLevel: 'warn',
    output: {
      dir: outDir,
      format: 'esm',
      // Flat, so that every chunk is two folders below the installation (src/config/installation.ts).
      entryFileNames: '[name].js',
      chunkFileNames: '[name]-[hash].js',
      // Names stay (stack traces, error names); only the whitespace goes.
      minify: { mangle: false, compress: false, codegen: { removeWhitespace: true } },
      // V8 keeps a module's source whole, at two bytes a character if one is not ASCII.
      charset: 'ascii',
    },
  });
  const files = output.output.map((file) => file.fileName);
  // The previous build's chunks stay one build longer: a daemon started from it (running while
  // `npm install` rebuilt) still loads the chunks it imports on first use.
  const kept = new Set([...files, ...previous, BUILD_RECORD]);
  for (const file of readdirSync(outDir)) if (!kept.has(file)) rmSync(join(outDir, file), { force: true, recursive: true });
  const record: BuildRecord = {
    built_at: builtAt,
    sources: [...sources.values()].sort((a, b) => a.path.localeCompare(b.path)),
    files: files.sort(),
    inlined: [...inlined].sort(),
  };
  writeFileSync(join(outDir, BUILD_RECORD), `${JSON.stringify(record, null, 2)}\n`);
  return record;
}

if (import.meta.main) {
  const record = await buildDaemon();
  // npm runs this at install (`prepare`) with the project's own Node first on the PATH: the one
  // line an install prints of it, where npm on an older Node would warn of every package.
  process.stdout.write(
    `built the daemon into ${BUILD_DIR.join('/')}/ from ${record.sources.length} files, with ${record.inlined.length} libraries bundled; Loom runs on Node ${process.version} (the "node" dev dependency, first on the PATH in npm start and npx loom)\n`,
  );
}
