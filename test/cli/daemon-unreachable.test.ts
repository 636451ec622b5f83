import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-unreachable-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

describe('CLI commands against a daemon that does not answer', () => {
  it('say that the daemon at the URL given is not running and how to start it, instead of "fetch failed"', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const unreachable = `error: the daemon at ${url} is not running: start it with \`loom start\` (or \`npm start\`); \`loom status\` tells where it runs\n`;
    // A call, a stream, and a GET of the commands reading the daemon's views: each the same line, exit status 1.
    expect(await runCli(home, ['--url', url, 'agent', 'list'])).toEqual({ code: 1, stdout: '', stderr: unreachable });
    expect(await runCli(home, ['send', 'helper', 'hi', '--stream'], { env: { LOOM_URL: url } })).toMatchObject({ code: 1, stderr: unreachable });
    expect(await runCli(home, ['--url', url, 'mcp', 'servers'])).toMatchObject({ code: 1, stderr: unreachable });
    expect(await runCli(home, ['--url', url, 'tools', 'export', 'some-tool'])).toMatchObject({ code: 1, stderr: unreachable });
  });

  it('say so for the daemon that the daemon file of this home names, when it no longer answers there', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    await mkdir(home, { recursive: true });
    // A live pid (this process) with a port nothing listens on: a daemon that hangs, or a pid reused.
    await writeFile(
      join(home, 'daemon.json'),
      JSON.stringify({ pid: process.pid, host: '127.0.0.1', port: Number(new URL(url).port), url, startedAt: new Date().toISOString(), version: 'test' }),
    );
    const result = await runCli(home, ['agent', 'reset', 'helper']);
    expect(result.stderr).toBe(
      `error: the daemon at ${url} is not running: start it with \`loom start\` (or \`npm start\`); \`loom status\` tells where it runs\n`,
    );
    expect(result.code).toBe(1);
  });

  it('say the connection was lost when the daemon closes it without an answer', async () => {
    const server: Server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      const url = `http://127.0.0.1:${address.port}`;
      const result = await runCli(home, ['--url', url, 'agent', 'list']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^error: lost the connection to the Loom daemon at ${url.replace(/\./g, '\\.')} \\((UND_ERR_SOCKET|ECONNRESET|EPIPE)\\); is it still running\\? `,
        ),
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
