import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { heldReply, tellerHome } from '../support/teller-home.ts';
import { waitFor } from '../support/wait-for.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let release: () => void;
let held: Promise<void>;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-chat-prompt-');
  home = await tellerHome(dir.path, server.url);
  ({ held, release } = heldReply());
});
afterEach(async () => {
  release();
  await dir.remove();
});

/** `loom chat <agent>` in-process as at a terminal: keys typed into its standard input (Enter is \r, Ctrl-C is \x03). */
function startChat(agent: string): { keys(text: string): void; output(): string; done: Promise<number>; finished(): boolean } {
  const stdin = new PassThrough();
  let stdout = '';
  let finished = false;
  const done = main(['chat', agent], {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stdout += text;
    },
    stdin,
    env: { LOOM_HOME: home, HOME: dirname(home), ...TEST_KEYS },
    cwd: process.cwd(),
    interactive: true,
  }).finally(() => {
    finished = true;
    stdin.end();
  });
  // What the terminal shows, without readline's cursor moves and clears.
  const output = (): string => stripVTControlCharacters(stdout);
  return { keys: (text) => stdin.write(text), output, done, finished: () => finished };
}

describe('loom chat at a terminal', () => {
  it('shows a prompt to type at, again after each reply', async () => {
    server.script([{ text: 'Hello there.' }]);
    const chat = startChat('teller');
    await waitFor('the first prompt', () => chat.output().includes('Type /help for commands, /exit or Ctrl-D to leave.\nyou> '));
    chat.keys('Hi\r');
    await waitFor('the reply, then the prompt again', () => /teller> Hello there\.[\s\S]*\nyou> $/.test(chat.output()));
    chat.keys('/exit\r');
    expect(await chat.done).toBe(0);
  });

  it('stays after a second Ctrl-C right after the one that stopped a reply, saying how to leave; the next Ctrl-C leaves', async () => {
    server.script([{ text: 'Once upon a time', stall: held }]);
    const chat = startChat('teller');
    await waitFor('the first prompt', () => chat.output().includes('you> '));
    chat.keys('Tell me a long story\r');
    await waitFor('the reply to start', () => chat.output().includes('teller> Once upon a time'));
    chat.keys('\x03');
    await waitFor('the reply to be stopped and the prompt back', () =>
      /\[cancelled: what was said so far is kept in the session\]\nyou> $/.test(chat.output()),
    );
    chat.keys('\x03');
    await waitFor('the note that it stays', () => chat.output().includes('(still here: the reply was stopped. Ctrl-C again, /exit or Ctrl-D leaves)'));
    expect(chat.finished()).toBe(false);
    chat.keys('\x03');
    expect(await chat.done).toBe(0);
  });

  it('leaves at the first Ctrl-C at an empty prompt when no reply was stopped', async () => {
    const chat = startChat('teller');
    await waitFor('the first prompt', () => chat.output().includes('you> '));
    chat.keys('\x03');
    expect(await chat.done).toBe(0);
    expect(chat.output()).not.toContain('still here');
  });
});
