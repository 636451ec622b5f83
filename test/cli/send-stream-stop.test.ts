import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { heldReply, tellerHome } from '../support/teller-home.ts';

const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'loom.js');
const CANCELLED_LINE = '[cancelled: what was said so far is kept in the session]';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let release: () => void;
let held: Promise<void>;
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-send-stop-');
  home = await tellerHome(dir.path, server.url);
  ({ held, release } = heldReply());
});
afterEach(async () => {
  release();
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await dir.remove();
});

/** `node bin/loom.js <args>` as a child process, as a person runs it; `until` waits for its standard output to show `text`. */
function startCli(args: readonly string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [ENTRY, ...args], {
    env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: home, HOME: dir.path, ...TEST_KEYS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const until = (text: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (stdout.includes(text)) resolve();
      };
      child.stdout.on('data', check);
      check();
      void exited.then(() => reject(new Error(`loom ${args.join(' ')} ended before printing ${JSON.stringify(text)}; it printed:\n${stdout}\n${stderr}`)));
    });
  return { child, until, exited, stdout: () => stdout, stderr: () => stderr };
}

describe('Ctrl-C in loom send --stream', () => {
  describe('with a daemon running', () => {
    let daemon: RunningDaemon;
    beforeEach(async () => {
      daemon = await startDaemon({
        home: resolveLoomHome({ LOOM_HOME: home }, dir.path),
        config: ConfigSchema.parse({}),
        env: TEST_KEYS,
        logger: createSilentLogger(),
        version: 'test',
        port: 0,
      });
    });
    afterEach(async () => {
      release();
      await daemon.stop();
    });

    it('cancels the turn on the daemon, says so, and exits 130; the daemon commits the partial reply marked cancelled', async () => {
      server.script([{ text: 'It was a dark and', stall: held }]);
      const cli = startCli(['send', 'teller', 'Tell me a story', '--stream']);
      await cli.until('It was a dark and');
      cli.child.kill('SIGINT');
      expect(await cli.exited).toEqual({ code: 130, signal: null });
      expect(cli.stderr()).toBe(`${CANCELLED_LINE}\n`);
      const session = await daemon.host.kernel.session('teller');
      expect(session.messages).toMatchObject([
        {
          role: 'user',
          content: 'Tell me a story',
          providerOptions: { loom: { turn: { status: 'cancelled', reason: expect.stringContaining('cancelled by the owner') as string } } },
        },
        { role: 'assistant', content: [{ type: 'text', text: 'It was a dark and' }, { type: 'text' }] },
      ]);
      expect(await daemon.host.kernel.runningTurn('teller')).toBeUndefined();
    }, 30_000);

    it('without --stream too: cancels the turn on the daemon, says so, prints no reply, and exits 130', async () => {
      server.script([{ text: 'A slow answer', stall: held }]);
      const cli = startCli(['send', 'teller', 'Answer slowly']);
      // The model has the request: the daemon runs the turn, and the command waits for its reply.
      await waitFor('the model to have the request', () => server.requests.length > 0 || undefined, { everyMs: 10 });
      expect(server.requests).toHaveLength(1);
      cli.child.kill('SIGINT');
      expect(await cli.exited).toEqual({ code: 130, signal: null });
      expect(cli.stderr()).toBe(`${CANCELLED_LINE}\n`);
      expect(cli.stdout()).toBe('');
      const session = await daemon.host.kernel.session('teller');
      expect(session.messages).toMatchObject([
        {
          role: 'user',
          content: 'Answer slowly',
          providerOptions: { loom: { turn: { status: 'cancelled', reason: expect.stringContaining('cancelled by the owner') as string } } },
        },
        { role: 'assistant', content: [{ type: 'text' }] },
      ]);
      expect(await daemon.host.kernel.runningTurn('teller')).toBeUndefined();
    }, 30_000);
  });

  describe('when the cancel does not come back', () => {
    let stub: Server;
    let cancels = 0;
    let cancelled: () => void = () => undefined;
    afterEach(async () => {
      stub.closeAllConnections();
      await new Promise((resolve) => stub.close(resolve));
    });

    it('a second Ctrl-C exits at once with 130, without waiting for the stream or the cancel', async () => {
      // A stand-in for a daemon whose cancel hangs (a turn stuck in a tool that ignores it), at the
      // wire of Loom's API: a real daemon cannot be made to hang on cue.
      const gotCancel = new Promise<void>((resolve) => (cancelled = resolve));
      stub = createServer((request, response) => {
        if (request.method === 'POST' && request.url === '/api/agents/teller/messages') {
          response.writeHead(200, { 'content-type': 'text/event-stream' });
          response.write(`event: text-delta\ndata: ${JSON.stringify({ type: 'text-delta', text: 'Working on it' })}\n\n`);
          return;
        }
        if (request.method === 'POST' && request.url === '/api/agents/teller/turn/cancel') {
          cancels += 1;
          cancelled();
          return;
        }
        response.writeHead(404).end();
      });
      await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
      const cli = startCli(['send', 'teller', 'A long job', '--stream'], { LOOM_URL: `http://127.0.0.1:${(stub.address() as AddressInfo).port}` });
      await cli.until('Working on it');
      cli.child.kill('SIGINT');
      await gotCancel;
      cli.child.kill('SIGINT');
      expect(await cli.exited).toEqual({ code: 130, signal: null });
      expect(cancels).toBe(1);
      expect(cli.stderr()).not.toContain(CANCELLED_LINE);
    }, 30_000);
  });

  it('cancels the turn of an in-process kernel when no daemon runs, and leaves no SIGINT listener', async () => {
    server.script([{ text: 'Once upon a time', stall: held }, { text: 'Where was I?' }]);
    let stdout = '';
    let stderr = '';
    let printed: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (printed = resolve));
    const done = main(['send', 'teller', 'Tell me a long story', '--stream'], {
      stdout: (text) => {
        stdout += text;
        if (stdout.includes('Once upon a time')) printed();
      },
      stderr: (text) => {
        stderr += text;
      },
      stdin: Readable.from(['']),
      env: { LOOM_HOME: home, HOME: dirname(home), ...TEST_KEYS },
      cwd: process.cwd(),
    });
    await Promise.race([started, done.then((code) => Promise.reject(new Error(`loom send ended (${code}) before the reply began: ${stdout}${stderr}`)))]);
    process.emit('SIGINT');
    expect(await done).toBe(130);
    expect(stderr).toBe(`${CANCELLED_LINE}\n`);
    expect(process.listenerCount('SIGINT')).toBe(0);
    // The next turn's request carried the cancelled reply and its note.
    expect((await runCli(home, ['send', 'teller', 'Go on'], { env: TEST_KEYS })).stdout).toBe('Where was I?\n');
    const sent = JSON.stringify(server.requests[1]?.body['messages']);
    expect(sent).toContain('Once upon a time');
    expect(sent).toContain('cut short');
  });
});
