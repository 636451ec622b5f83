#!/usr/bin/env node
import module from 'node:module';
import process from 'node:process';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';

// Loom runs TypeScript sources directly (Node 24 strips types), so check the version before
// loading anything: on an older Node the import below would fail with an obscure syntax error.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `loom: Node.js 24 or later is required, this is ${process.version}.\n` +
      '  Inside the repository, run Loom through npm (`npm start`, `npx loom …`): the project\n' +
      '  installs Node 24 as a dev dependency and npm puts it first on the PATH.\n',
  );
  process.exit(1);
}
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
