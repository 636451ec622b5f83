import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { Host } from '../../src/host/index.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { createJsonLogRecorder, openTestHost, stderrLogOf, TEST_KEYS } from '../support/test-host.ts';
import { waitFor } from '../support/wait-for.ts';

// The bounds docs/code-agents.md promises (written out, not imported, so the test states them).
const STDERR_WINDOW_MS = 60_000;
const STDERR_LOGGED_LINES = 200;
const STDERR_LOGGED_BYTES = 64 * 1024;
const STDERR_LINE_CHARS = 1000;

/** The environment Loom is given: the test keys and PATH (to find python3). */
const ENV = { ...TEST_KEYS, PATH: process.env['PATH'] ?? '/usr/bin:/bin' };

const SCRIPT = `import fcntl, struct, sys, termios, time
import loom_agent

def read_by_loom():
    # Until the stderr pipe is empty: Loom has read (and counted) every line written so far.
    sys.stderr.flush()
    while struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\\0\\0\\0\\0"))[0] > 0:
        time.sleep(0.001)

def handle(request, host):
    words = request["message"].split()
    if words[0] == "flood":
        for index in range(int(words[1])):
            sys.stderr.write("line %d\\n" % index)
        read_by_loom()
        if words[2:] == ["die"]:
            sys.exit(3)
        return "flooded %s" % words[1]
    if words[0] == "wide":
        for index in range(int(words[1])):
            sys.stderr.write("%d:%s\\n" % (index, "w" * 3000))
        if words[2:] == ["die"]:
            sys.exit(3)
        return "wide %s" % words[1]
    if words[0] == "logs":
        for index in range(int(words[1])):
            host.log("entry %d" % index)
        return "logged %s" % words[1]
    if words[0] == "quiet":
        return "quiet"
    print("printed, not answered")
    return "py: " + request["message"]

loom_agent.run(handle)
`;

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: Host | undefined;
let clock: FakeClock;
/** The JSON records the host's logger wrote. */
let records: Record<string, unknown>[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-python-stderr-');
  clock = createFakeClock();
  // A host as the daemon builds it, its log kept here, on a fake clock.
  const recording = createJsonLogRecorder();
  records = recording.records;
  host = await openTestHost(dir.path, {}, ENV, { logger: recording.logger, clock });
});
afterEach(async () => {
  await host?.close();
  host = undefined;
  await dir.remove();
});

function kernel(): Host['kernel'] {
  return (host as Host).kernel;
}

async function spawnFlooder(name: string): Promise<void> {
  const path = join(dir.path, `${name}.py`);
  await writeFile(path, SCRIPT);
  await kernel().spawn(manifest(`name = "${name}"\nmodule = "python:${path}"\n[capabilities]\nshell = ["python3"]\n`));
}

function stderrLog(agent: string): string[] {
  return stderrLogOf(records, agent);
}

function isNote(line: string): boolean {
  return line.startsWith('stderr: ') && line.includes('left out of the log');
}

/** Waits until `agent`'s log holds `count` notes. */
async function notes(agent: string, count: number): Promise<string[]> {
  await waitFor(`${count} note(s) in the log of "${agent}"`, () => stderrLog(agent).filter(isNote).length >= count);
  return stderrLog(agent).filter(isNote);
}

/** The bytes `line 0` … `line n-1` take, each with its newline, from `from` on. */
function floodBytes(from: number, to: number): number {
  let bytes = 0;
  for (let index = from; index < to; index += 1) bytes += `line ${index}\n`.length;
  return bytes;
}

describe('a python: module that floods stderr', () => {
  it('logs at most its budget and one note of how much was left out, and goes on answering', async () => {
    await spawnFlooder('noisy');
    expect((await kernel().send('noisy', 'flood 5000')).text).toBe('flooded 5000');
    // Still in the same window: its print() is left out too, and it answers.
    expect((await kernel().send('noisy', 'after')).text).toBe('py: after');
    // The note comes once its streams close (here, when it is stopped).
    await kernel().kill('noisy');
    expect(await notes('noisy', 1)).toHaveLength(1);

    const logged = stderrLog('noisy');
    expect(logged).toHaveLength(STDERR_LOGGED_LINES + 1);
    expect(logged.slice(0, STDERR_LOGGED_LINES)).toEqual(Array.from({ length: STDERR_LOGGED_LINES }, (_, index) => `line ${index}`));
    const dropped = 5000 - STDERR_LOGGED_LINES + 1;
    const droppedBytes = floodBytes(STDERR_LOGGED_LINES, 5000) + 'printed, not answered\n'.length;
    expect(logged[STDERR_LOGGED_LINES]).toBe(
      `stderr: ${dropped} lines (${droppedBytes} bytes) left out of the log in the 60 s from 2026-01-01T00:00:00.000Z ` +
        `(Loom logs at most ${STDERR_LOGGED_LINES} lines and ${STDERR_LOGGED_BYTES} bytes of a Python module's stderr per 60 s, each line cut at ${STDERR_LINE_CHARS} characters)`,
    );
    const note = records.find((record) => record['agent'] === 'noisy' && isNote(String(record['msg'])));
    // A warning (pino's level 40), with the counts as fields.
    expect(note).toMatchObject({ level: 40, droppedLines: dropped, droppedBytes });
  });

  it("logs again in the next window of the agent's clock, after the note for the last one", async () => {
    await spawnFlooder('steady');
    // The script answers once Loom has read the whole flood off its pipe (Loom reads the two pipes
    // in no fixed order), so every line of it counts in this window before the clock moves on.
    expect((await kernel().send('steady', 'flood 3000')).text).toBe('flooded 3000');
    expect(stderrLog('steady')).toHaveLength(STDERR_LOGGED_LINES);
    // A message just before the window ends, that writes nothing (a line of it could be read late,
    // in the next window): nothing is logged yet.
    await clock.advance(STDERR_WINDOW_MS - 1);
    expect((await kernel().send('steady', 'quiet')).text).toBe('quiet');
    expect(stderrLog('steady')).toHaveLength(STDERR_LOGGED_LINES);
    await clock.advance(1);
    expect((await kernel().send('steady', 'two')).text).toBe('py: two');
    await waitFor('the note and the line of the next window', () => stderrLog('steady').length >= STDERR_LOGGED_LINES + 2);
    const logged = stderrLog('steady');
    expect(logged).toHaveLength(STDERR_LOGGED_LINES + 2);
    expect(logged[STDERR_LOGGED_LINES]).toMatch(
      new RegExp(
        `^stderr: ${3000 - STDERR_LOGGED_LINES} lines \\(${floodBytes(STDERR_LOGGED_LINES, 3000)} bytes\\) left out of the log in the 60 s from 2026-01-01T00:00:00\\.000Z`,
      ),
    );
    expect(logged[STDERR_LOGGED_LINES + 1]).toBe('printed, not answered');
  });

  it('holds long lines to the byte budget, each cut', async () => {
    await spawnFlooder('wide');
    expect((await kernel().send('wide', 'wide 500')).text).toBe('wide 500');
    await kernel().kill('wide');
    const [note] = await notes('wide', 1);
    const logged = stderrLog('wide').filter((line) => !isNote(line));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((line) => line.length < STDERR_LINE_CHARS + 50 && line.endsWith('more characters)'))).toBe(true);
    expect(logged.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)).toBeLessThanOrEqual(STDERR_LOGGED_BYTES);
    expect(note).toMatch(new RegExp(`^stderr: ${500 - logged.length} lines \\(\\d+ bytes\\) left out of the log`));
  });

  it('explains a death with the end of its stderr cut as the log cuts it, so the error stays short', async () => {
    await spawnFlooder('wide-doomed');
    const error = await kernel()
      .send('wide-doomed', 'wide 3 die')
      .then(
        () => undefined,
        (reason: unknown) => reason as Error,
      );
    expect(error?.message).toMatch(
      /exited \(code 3\) before it answered: 0:w+… \(2002 more characters\) \| 1:w+… \(2002 more characters\) \| 2:w+… \(2002 more characters\)$/,
    );
    expect(error?.message.length).toBeLessThan(3 * (STDERR_LINE_CHARS + 40) + 200);
  });

  it("logs a message's first 200 host.log lines and one warning counting the rest, and the next message's again", async () => {
    await spawnFlooder('chatty');
    const hostLog = () => records.filter((record) => record['source'] === 'module').map((record) => String(record['msg']));
    expect((await kernel().send('chatty', 'logs 1000')).text).toBe('logged 1000');
    expect(hostLog().filter((line) => line.startsWith('entry '))).toEqual(Array.from({ length: 200 }, (_, index) => `entry ${index}`));
    expect(hostLog().filter((line) => line.startsWith('host.log: '))).toEqual([
      'host.log: 800 lines of this message left out of the log (a message logs at most 200 lines and 64 KiB)',
    ]);
    expect((await kernel().send('chatty', 'logs 3')).text).toBe('logged 3');
    expect(
      hostLog()
        .filter((line) => line.startsWith('entry '))
        .slice(200),
    ).toEqual(['entry 0', 'entry 1', 'entry 2']);
  });

  it('still explains a death with the end of its stderr, logged or not', async () => {
    await spawnFlooder('doomed');
    await expect(kernel().send('doomed', 'flood 2000 die')).rejects.toThrow(/exited \(code 3\) before it answered: line 1997 \| line 1998 \| line 1999$/);
    expect(await notes('doomed', 1)).toHaveLength(1);
    expect(stderrLog('doomed').filter((line) => !isNote(line))).toHaveLength(STDERR_LOGGED_LINES);
  });
});
