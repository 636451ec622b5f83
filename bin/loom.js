#!/usr/bin/env node
import module from 'node:module';
import process from 'node:process';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Loom runs TypeScript sources directly (Node 24 strips types), so check the version before
// loading anything: on an older Node the import below would fail with an obscure syntax error.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) await runOnOwnNode();
// A reader that stops early (`loom --help | head`) closes the pipe: the rest of the output has
// nowhere to go, which is no error to report. Leave quietly, with the status so far.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(process.exitCode ?? 0);
  });
}
// Cache compiled (and type-stripped) modules between runs: it halves start-up time and memory.
module.enableCompileCache?.();
// The built daemon (`npm run build`, run by `npm install`) while every file it was built from is
// unchanged, else the sources themselves (decision 0031).
const { daemonEntry } = await import('../src/config/daemon-build.ts');
const entry = daemonEntry(dirname(import.meta.dirname), process.env);
const { main } = await import(pathToFileURL(entry.path).href);
process.exitCode = await main(process.argv.slice(2));

/**
 * On an older Node (the machine's own, when `node_modules/.bin/loom` is run from a shell), runs
 * this same command on the Node 24 the installation brings as its "node" dev dependency, which is
 * what npm scripts and `npx loom` run on, and exits as it does; refuses when there is none (an
 * installation without dev dependencies). Never returns.
 */
async function runOnOwnNode() {
  const own = join(dirname(dirname(fileURLToPath(import.meta.url))), 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(own)) {
    process.stderr.write(
      `loom: Node.js 24 or later is required, this is ${process.version}.\n` +
        '  Inside the repository, run Loom through npm (`npm start`, `npx loom …`): the project\n' +
        '  installs Node 24 as a dev dependency and npm puts it first on the PATH.\n',
    );
    process.exit(1);
  }
  const child = spawn(own, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  // Ctrl-C at a terminal reaches both processes: the command decides what it means (loom chat
  // stops the reply, then leaves), and this one waits for it. Other signals are passed on.
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  await new Promise(() => {
    child.on('error', (error) => {
      process.stderr.write(`loom: cannot start Node 24 at ${own}: ${error.message}\n`);
      process.exit(1);
    });
    child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0))));
  });
}
