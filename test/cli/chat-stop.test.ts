import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { heldReply, tellerHome } from '../support/teller-home.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let release: () => void;
let held: Promise<void>;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-chat-stop-');
  home = await tellerHome(dir.path, server.url);
  ({ held, release } = heldReply());
});
afterEach(async () => {
  release();
  await dir.remove();
});

/** `loom chat <agent>` run in-process with a standard input the test types into, as at a pipe. */
function startChat(agent: string): { type(line: string): void; until(text: string): Promise<void>; output(): string; done: Promise<number> } {
  const stdin = new PassThrough();
  let stdout = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  const done = main(['chat', agent], {
    stdout: (text) => {
      stdout += text;
      for (const waiter of waiters.filter((candidate) => stdout.includes(candidate.text))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    },
    stderr: (text) => {
      stdout += text;
    },
    stdin,
    env: { LOOM_HOME: home, HOME: dirname(home), ...TEST_KEYS },
    cwd: process.cwd(),
  });
  return {
    type: (line) => stdin.write(`${line}\n`),
    until: (text) =>
      stdout.includes(text)
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => waiters.push({ text, resolve })),
            done.then(() => {
              throw new Error(`loom chat ended before printing ${JSON.stringify(text)}; it printed:\n${stdout}`);
            }),
          ]),
    output: () => stdout,
    done: done.finally(() => stdin.end()),
  };
}

describe('Ctrl-C in loom chat', () => {
  it('cancels the reply, not the program: the partial reply is said cancelled, kept, and the conversation goes on (in process)', async () => {
    server.script([{ text: 'Once upon a time', stall: held }, { text: 'Where was I?' }]);
    const chat = startChat('teller');
    chat.type('Tell me a long story');
    await chat.until('teller> Once upon a time');
    process.emit('SIGINT');
    await chat.until('[cancelled: what was said so far is kept in the session]');
    chat.type('Go on');
    await chat.until('Where was I?');
    chat.type('/exit');
    expect(await chat.done).toBe(0);
    // The next request carried the cancelled reply and its note.
    const sent = JSON.stringify(server.requests[1]?.body['messages']);
    expect(sent).toContain('Once upon a time');
    expect(sent).toContain('cut short');
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

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

    it('cancels the reply through the daemon, which commits it marked cancelled', async () => {
      server.script([{ text: 'It was a dark and', stall: held }]);
      const chat = startChat('teller');
      chat.type('Tell me a story');
      await chat.until('teller> It was a dark and');
      process.emit('SIGINT');
      await chat.until('[cancelled: what was said so far is kept in the session]');
      chat.type('/exit');
      expect(await chat.done).toBe(0);
      const session = await daemon.host.kernel.session('teller');
      expect(session.messages).toMatchObject([
        {
          role: 'user',
          content: 'Tell me a story',
          providerOptions: { loom: { turn: { status: 'cancelled', reason: expect.stringContaining('cancelled by the owner') as string } } },
        },
        { role: 'assistant', content: [{ type: 'text', text: 'It was a dark and' }, { type: 'text' }] },
      ]);
    });

    it('loom cancel <agent> cancels a turn another client started, and exits 2 when none runs', async () => {
      server.script([{ text: 'Working on it', stall: held }]);
      const events = daemon.host.kernel.stream('teller', 'A long job')[Symbol.asyncIterator]();
      for (let next = await events.next(); !(next.done === true || next.value.type === 'text-delta'); next = await events.next());
      const cancelled = await runCli(home, ['cancel', 'teller'], { env: TEST_KEYS });
      expect(cancelled).toMatchObject({ code: 0, stdout: 'Cancelled the turn of teller; what it said so far is kept in its session.\n' });
      const none = await runCli(home, ['cancel', 'teller', '--json'], { env: TEST_KEYS });
      expect(none).toMatchObject({ code: 2, stderr: 'error: agent "teller" has no turn running; nothing to cancel\n' });
    });
  });
});
