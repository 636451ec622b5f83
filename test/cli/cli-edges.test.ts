import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const root = join(import.meta.dirname, '../..');

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-edges-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

describe('loom with its output piped to a reader that stops early', () => {
  it('exits quietly, with no EPIPE stack trace, when the pipe closes before it has written (loom --help | head)', async () => {
    const child = spawn(process.execPath, [join(root, 'bin/loom.js'), '--help'], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader is gone before loom writes a byte.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('loom start given options that npm kept for itself', () => {
  it('says to write `npm start -- --port 4210` when `npm start --port 4210` left only "4210"', async () => {
    // What npm hands the script for `npm start --port 4210`: npm_config_port=true and the stray "4210".
    const result = await runCli(home, ['start', '--foreground', '4210'], { env: { npm_lifecycle_event: 'start', npm_config_port: 'true' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'error: cannot start Loom with --port 4210: npm kept it for itself, as npm does with options before `--`; run `npm start -- --port 4210`\n',
    );
  });

  it('says the same for `npm start --port=4210`, which leaves no stray word', async () => {
    const result = await runCli(home, ['start', '--foreground'], { env: { npm_lifecycle_event: 'start', npm_config_port: '4210' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('run `npm start -- --port 4210`');
  });

  it('refuses a stray word outside npm, showing how options are written', async () => {
    const result = await runCli(home, ['start', '4210']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: loom start takes no arguments, got "4210"; options are written --port 4210 (through npm: npm start -- --port 4210)\n');
  });
});

/**
 * `loom send --stream` against a daemon that starts a reply with one text event (its SSE `id:`
 * line when `id` is given), then dies: the stream's socket closed, and with `gone` nothing
 * listening any more. Resolves with what the CLI printed and the daemon's URL.
 */
async function sendToDyingDaemon(options: { id?: string; gone: boolean }): Promise<{ result: Awaited<ReturnType<typeof runCli>>; url: string }> {
  const server = createServer((request, response) => {
    if (request.url?.endsWith('/messages') !== true) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const id = options.id === undefined ? '' : `id: ${options.id}\n`;
    response.write(`${id}event: text-delta\ndata: ${JSON.stringify({ type: 'text-delta', text: 'Half a ' })}\n\n`, () => {
      if (options.gone) server.close();
      response.socket?.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const url = `http://127.0.0.1:${address.port}`;
    return { result: await runCli(home, ['--url', url, 'send', 'helper', 'hi', '--stream']), url };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** `url` as a regular expression matching it literally. */
const literally = (url: string): string => url.replace(/\./g, '\\.');

describe('loom send --stream when the daemon goes away mid-reply', () => {
  it(
    'tries to take the reply up again, then says the connection to the daemon was lost while the reply streamed, not "terminated"',
    { timeout: 60_000 },
    async () => {
      const { result, url } = await sendToDyingDaemon({ id: 't1:e1:1', gone: true });
      expect(result.code).toBe(1);
      // What it showed, then each try to take the stream up again (about 16 s in all), then why it stopped.
      expect(result.stdout).toBe(
        `Half a \n${[1, 2, 3, 4, 5, 6].map((attempt) => `  ⟳ the connection to the daemon broke; reconnecting… (try ${attempt} of 6)\n`).join('')}`,
      );
      expect(result.stderr).toMatch(
        new RegExp(`^error: lost the connection to the Loom daemon at ${literally(url)} while the reply streamed, and could not get it back \\(6 tries`),
      );
      expect(result.stderr).not.toContain('terminated');
    },
  );

  it("does not take up a reply whose stream broke before any event named its turn: it could follow another message's reply", async () => {
    const { result, url } = await sendToDyingDaemon({ gone: false });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('Half a \n');
    expect(result.stderr).toMatch(
      new RegExp(
        `^error: lost the connection to the Loom daemon at ${literally(url)} before the reply's first event named its turn, so it is not taken up again`,
      ),
    );
  });
});
