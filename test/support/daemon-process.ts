/** A real `loom start --foreground` process on a temporary home, for tests of what a daemon does across its own life. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { waitFor } from './wait-for.ts';
import { makeTempDir } from './test-kernel.ts';

const BIN = join(import.meta.dirname, '../../bin/loom.js');

/** A running daemon: its process, its URL, how it ends, and what it printed. */
export interface DaemonProcess {
  child: ChildProcess;
  url: string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  output(): string;
}

/** The test's temporary folder and home; the folders change for each test. */
export interface DaemonHome {
  /** The test's temporary folder (HOME of the daemon). */
  readonly dir: string;
  /** LOOM_HOME, inside `dir`. */
  readonly home: string;
  /**
   * Starts a daemon on the home (port 0 unless `port` is given, an OpenAI key that only the
   * scripted model takes) and waits until it answers; `env` adds to its environment (e.g. `NODE_OPTIONS`).
   */
  start(options?: { env?: Readonly<Record<string, string>>; port?: number }): Promise<DaemonProcess>;
}

/**
 * Gives each test of the file a fresh home and kills, after it, every daemon it started and did
 * not stop. A daemon that exits before it answers fails `start()` with what it printed.
 */
export function useDaemonHome(prefix: string): DaemonHome {
  let temp: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let children: ChildProcess[] = [];
  const folder = (): string => {
    if (temp === undefined) throw new Error('useDaemonHome: used outside a test');
    return temp.path;
  };
  beforeEach(async () => {
    temp = await makeTempDir(prefix);
    children = [];
  });
  afterEach(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await temp?.remove();
    temp = undefined;
  });
  return {
    get dir() {
      return folder();
    },
    get home() {
      return join(folder(), 'home');
    },
    async start(options = {}) {
      const home = join(folder(), 'home');
      const child = spawn(process.execPath, [BIN, 'start', '--foreground', '--port', String(options.port ?? 0)], {
        env: { PATH: process.env['PATH'] ?? '', HOME: folder(), LOOM_HOME: home, OPENAI_API_KEY: 'sk-test', ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const up = waitFor(
        'the daemon to answer',
        async () => {
          const info = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { url: string; pid: number };
          return info.pid === child.pid && (await fetch(`${info.url}/api/health`)).ok ? info.url : undefined;
        },
        { everyMs: 50 },
      );
      const gone = exited.then((code) => {
        throw new Error(`the daemon exited (${code}) before it answered; it said:\n${output}`);
      });
      up.catch(() => undefined);
      gone.catch(() => undefined);
      const url = await Promise.race([up, gone]);
      return { child, url, exited, output: () => output };
    },
  };
}
