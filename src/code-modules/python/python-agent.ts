import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { kill } from 'node:process';
import { installedPath } from '../../config/installation.ts';
import type { Clock, Logger } from '../../contracts/index.ts';
import { CodeModuleError } from '../../errors/index.ts';
import { type CodeModuleOptions, type CodeModuleRunner, withinLimit } from '../code-module-runner.ts';
import { cutLine, STDERR_LINE_CHARS } from '../cut-line.ts';
import { createLineBudget, MODULE_LOG_BYTES, MODULE_LOG_LINES } from '../line-budget.ts';
import { answerHostCall, type HostCallPort } from '../host-calls.ts';
import { excerpt, replyText } from '../protocol.ts';
import { safeParseJson } from '../../validation/index.ts';

/** The folder of `loom_agent.py`, put on every script's PYTHONPATH. */
export const PYTHON_HELPER_DIR = installedPath('src', 'code-modules', 'python');

/** Restarts after a death wait this long, doubling up to the most, and stop after so many in a row without an answer. */
const RESTART_FIRST_MS = 500;
const RESTART_MOST_MS = 30_000;
const RESTARTS_WITHOUT_ANSWER = 5;
/** The stderr lines kept to explain a death (all of them count, logged or not). */
const STDERR_TAIL = 20;

/**
 * How long a window of a Python module's stderr budget lasts, on the agent's clock. The budget is
 * per window of time rather than per message (as for WASI) because the process is long-lived: it
 * writes between messages too (as it starts, from its own threads), and only a budget over time
 * bounds what it can put into Loom's log whatever it does. A window opens with the first line
 * after the last one ended.
 */
const PYTHON_STDERR_WINDOW_MS = 60_000;
/** The most lines, and bytes, of a Python module's stderr logged per window: its first ones; the rest are left out and counted. */
const PYTHON_STDERR_LOGGED_LINES = MODULE_LOG_LINES;
const PYTHON_STDERR_LOGGED_BYTES = MODULE_LOG_BYTES;

/**
 * The message a script is answering. It is settled once it has an outcome (its reply, or the
 * fault that ends it) and none of its host calls is still being answered: a host call is the
 * agent's act within its turn (a model call is counted when the turn ends), so the turn may not
 * end before the calls it started.
 */
interface Pending {
  resolve: (text: string) => void;
  reject: (error: Error) => void;
  port: HostCallPort;
  /** Its host calls being answered. */
  hostCalls: number;
  /** Its reply's text, or the error that fails it; the first one stands. */
  outcome?: { text: string } | { error: Error };
}

/** A running script and the message it answers. */
interface Process {
  child: ChildProcessWithoutNullStreams;
  stderrTail: string[];
  exited: boolean;
  pending?: Pending;
}

/**
 * A `python:` agent's script in one long-lived supervised process (not a sandbox: it can do what
 * its OS user can; the agent needs shell_exec for its interpreter). JSON lines on stdin and
 * stdout, stderr to Loom's log under the agent's name, within a budget per window of time (see
 * {@link createStderrLog}); writing to stderr never stops the process. A process that dies is
 * started again with backoff; a message it was answering gets an error, and one that comes while
 * it is down starts it at once.
 */
export function createPythonAgent(options: CodeModuleOptions & { interpreter: string }): CodeModuleRunner {
  const { path, name, limits, clock, logger, interpreter } = options;
  const what = `agent "${name}"'s script`;
  let current: Process | undefined;
  let closed = false;
  let deaths = 0;
  const restartTimer = new AbortController();
  // The agent's budget, not one process's: a script started again is still in the same window.
  const stderrLog = createStderrLog(logger, clock);

  function fail(process: Process, error: CodeModuleError): void {
    const pending = process.pending;
    if (pending === undefined) return;
    pending.outcome ??= { error };
    settle(process, pending);
  }

  /** Ends `pending` when it has an outcome and no host call of its is still being answered. */
  function settle(process: Process, pending: Pending): void {
    const { outcome } = pending;
    if (outcome === undefined || pending.hostCalls > 0) return;
    if (process.pending === pending) delete process.pending;
    if ('text' in outcome) pending.resolve(outcome.text);
    else pending.reject(outcome.error);
  }

  function onLine(process: Process, line: string): void {
    // A process Loom has let go of (stopped, replaced, dead) answers nothing any more.
    if (current !== process || line.trim() === '') return;
    const parsed = safeParseJson(line);
    const message = parsed.ok ? (parsed.value as { type?: unknown; id?: unknown; call?: unknown; reply?: unknown } | null) : null;
    if (message === null || typeof message !== 'object') {
      fail(
        process,
        new CodeModuleError(
          'protocol',
          `${what} printed a line that is not a protocol message (use print() only through loom_agent, which sends it to the log): ${excerpt(line)}`,
        ),
      );
      // Its stream is out of step: it starts afresh with the next message.
      discard(process);
      return;
    }
    const pending = process.pending;
    if (message.type === 'host_call' || message.type === 'reply') {
      if (pending === undefined) {
        outOfTurn(process, `a ${message.type} line while no message was being answered`, line);
        return;
      }
      // Answered already, its reply waiting on host calls: a host call now would run after the
      // turn it belongs to (never counted in it), and a second reply would have no message.
      if (pending.outcome !== undefined) {
        outOfTurn(process, `a ${message.type} line after its message was answered`, line);
        return;
      }
    }
    if (message.type === 'host_call' && pending !== undefined) {
      pending.hostCalls += 1;
      void answerHostCall({ parsed: message.call }, pending.port).then((result) => {
        pending.hostCalls -= 1;
        write(process, { type: 'host_result', id: message.id, result });
        settle(process, pending);
      });
      return;
    }
    if (message.type === 'reply' && pending !== undefined) {
      try {
        pending.outcome = { text: replyText(message.reply, what) };
        deaths = 0;
      } catch (error) {
        pending.outcome = { error: error as Error };
      }
      settle(process, pending);
      return;
    }
    outOfTurn(process, 'a line of a type the protocol does not have', line);
  }

  /**
   * Fails the message a process is answering, if any, and replaces the process: a line out of
   * turn means its stream is out of step with Loom's, and a reply it still owes would otherwise
   * answer the next message, perhaps another caller's.
   */
  function outOfTurn(process: Process, problem: string, line: string): void {
    const message = `${what} sent ${problem} (${excerpt(line)}); its process is replaced`;
    logger.warn({ fault: 'protocol' }, message);
    fail(process, new CodeModuleError('protocol', message));
    discard(process);
  }

  /** Kills a process whose stream can no longer be trusted; the next message starts another. */
  function discard(process: Process): void {
    if (current === process) current = undefined;
    // One already reaped was killed whole when it exited; its group's number may be another's by now.
    if (!process.exited) killGroup(process.child);
  }

  function write(process: Process, message: unknown): void {
    if (!process.exited) process.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  function start(): Process {
    // Its working folder; the workspace hook makes it at spawn, but it may have been removed since.
    mkdirSync(options.workspace, { recursive: true });
    // -B: importing loom_agent writes no bytecode into Loom's own folder; -u: replies are not held in a buffer.
    const env = { ...options.env, PYTHONPATH: PYTHON_HELPER_DIR, PYTHONIOENCODING: 'utf-8' };
    // detached: the script leads a process group of its own, which Loom kills whole (killGroup),
    // so the programs it started do not outlive it.
    const child = spawn(interpreter, ['-B', '-u', path], { cwd: options.workspace, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    logger.debug({ pid: child.pid }, `${what} started`);
    const process: Process = { child, stderrTail: [], exited: false };
    onLines(
      child.stdout,
      limits.maxReplyBytes + 1024,
      (line) => onLine(process, line),
      (bytes) => {
        fail(process, tooLarge(bytes));
        discard(process);
      },
    );
    onLines(child.stderr, 64 * 1024, (line) => {
      if (line.trim() === '') return;
      stderrLog.line(line);
      // Cut as the log cuts it: the tail explains a death in an error, which goes into answers and a model's tool results.
      process.stderrTail.push(cutLine(line));
      if (process.stderrTail.length > STDERR_TAIL) process.stderrTail.shift();
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => {
      process.exited = true;
      fail(process, new CodeModuleError('load', `cannot start ${what} with "${interpreter}": ${error.message}`, { cause: error }));
      if (current === process) current = undefined;
    });
    child.on('exit', (code, signal) => {
      process.exited = true;
      // What it started goes with it, however it ended.
      killGroup(child);
      const tail = process.stderrTail.slice(-3).join(' | ');
      fail(process, new CodeModuleError('exited', `${what} exited (${signal ?? `code ${code}`}) before it answered${tail === '' ? '' : `: ${tail}`}`));
      if (current !== process) return;
      current = undefined;
      deaths += 1;
      logger.warn({ code, signal, deaths }, `${what} exited`);
      scheduleRestart();
    });
    // Once its streams are closed (after its last line of stderr): the note of what was left out, if any.
    child.on('close', () => stderrLog.note());
    // Only a message in flight keeps Loom's process alive for the script (see `turn`).
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref?: () => void }).unref?.();
    return process;
  }

  function tooLarge(bytes: number): CodeModuleError {
    return new CodeModuleError(
      'too-large',
      `${what} wrote a line of ${bytes} bytes or more, over its limit of ${limits.maxReplyBytes} ([code].max_reply_bytes)`,
    );
  }

  /** Starts the script again after a death, waiting longer after each one in a row. */
  function scheduleRestart(): void {
    if (closed || deaths > RESTARTS_WITHOUT_ANSWER) return;
    const delay = Math.min(RESTART_FIRST_MS * 2 ** (deaths - 1), RESTART_MOST_MS);
    clock.sleep(delay, { signal: restartTimer.signal }).then(
      () => {
        if (!closed && current === undefined) current = start();
      },
      () => undefined,
    );
  }

  async function stop(): Promise<void> {
    const process = current;
    current = undefined;
    if (process === undefined || process.exited) return;
    const exited = new Promise<void>((resolve) => process.child.once('exit', () => resolve()));
    process.child.ref();
    killGroup(process.child);
    await exited;
    // Its streams may close later (or never, while a process it started holds stderr): the note
    // of what was left out so far is logged now, not left to them.
    stderrLog.note();
  }

  return {
    async turn(request, port, signal) {
      if (closed) throw new CodeModuleError('exited', `${what} is stopped`);
      current ??= start();
      const process = current;
      const reply = new Promise<string>((resolve, reject) => {
        process.pending = { resolve, reject, port, hostCalls: 0 };
      });
      process.child.ref();
      try {
        process.child.stdin.write(`{"type":"message","request":${request}}\n`);
        return await withinLimit(reply, { clock, timeoutMs: limits.timeoutMs, signal, what, stop });
      } finally {
        delete process.pending;
        process.child.unref();
      }
    },
    async close() {
      closed = true;
      restartTimer.abort();
      await stop();
    },
  };
}

/**
 * SIGKILLs the process group `child` leads (it was spawned `detached`): the script and every
 * program it started that stayed in its group. One that left it (`setsid`, `setpgid`) is out of
 * reach; a Python script is not a sandbox.
 */
function killGroup(child: ChildProcessWithoutNullStreams): void {
  if (child.pid === undefined) return;
  try {
    kill(-child.pid, 'SIGKILL');
  } catch (error) {
    // ESRCH: the group is gone already (its last member exited); EPERM: its number now names a
    // group of another user's. Either way nothing of the script's is left to stop.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ESRCH' && code !== 'EPERM') throw error;
  }
}

/** A module's stderr on its way to the log, held to a budget per window of time. */
interface StderrLog {
  /** Logs `line`, or counts it as left out when the window's budget is spent. */
  line(line: string): void;
  /** Logs the note of what was left out since the last one, if anything was. */
  note(): void;
}

/**
 * Logs a Python module's stderr under a budget: at most {@link PYTHON_STDERR_LOGGED_LINES} lines
 * and {@link PYTHON_STDERR_LOGGED_BYTES} bytes per {@link PYTHON_STDERR_WINDOW_MS} of `clock`,
 * each cut at {@link STDERR_LINE_CHARS} characters. The first line over the budget spends
 * the window: the rest of it is left out (so what is logged is each window's first lines, in order,
 * with no gaps) and counted, and one warning says how much, when the next window opens with a
 * line or when the process's streams close. A note cannot come sooner without a timer, which
 * would keep Loom's process alive for the script (see `turn`).
 */
function createStderrLog(logger: Logger, clock: Clock): StderrLog {
  let windowStart: number | undefined;
  const budget = createLineBudget(PYTHON_STDERR_LOGGED_LINES, PYTHON_STDERR_LOGGED_BYTES);

  function note(): void {
    if (windowStart === undefined) return;
    const { lines: droppedLines, bytes: droppedBytes } = budget.leftOut();
    if (droppedLines === 0) return;
    logger.warn(
      { stream: 'stderr', droppedLines, droppedBytes },
      `stderr: ${droppedLines} lines (${droppedBytes} bytes) left out of the log in the ${PYTHON_STDERR_WINDOW_MS / 1000} s from ${new Date(windowStart).toISOString()} ` +
        `(Loom logs at most ${PYTHON_STDERR_LOGGED_LINES} lines and ${PYTHON_STDERR_LOGGED_BYTES} bytes of a Python module's stderr per ${PYTHON_STDERR_WINDOW_MS / 1000} s, each line cut at ${STDERR_LINE_CHARS} characters)`,
    );
  }

  return {
    line(line) {
      const now = clock.now();
      if (windowStart === undefined || now - windowStart >= PYTHON_STDERR_WINDOW_MS || now < windowStart) {
        note();
        windowStart = now;
        budget.reset();
      }
      const shown = budget.take(line);
      if (shown !== undefined) logger.info({ stream: 'stderr' }, shown);
    },
    note,
  };
}

/**
 * Calls `onLine` for each line `stream` writes. A line longer than `maxBytes` goes to `onTooLong`
 * when given (else it is cut there and delivered in pieces).
 */
function onLines(stream: NodeJS.ReadableStream, maxBytes: number, onLine: (line: string) => void, onTooLong?: (bytes: number) => void): void {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffer += chunk;
    let end = buffer.indexOf('\n');
    while (end !== -1) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (onTooLong !== undefined && Buffer.byteLength(line) > maxBytes) onTooLong(Buffer.byteLength(line));
      else onLine(line);
      end = buffer.indexOf('\n');
    }
    if (buffer.length > maxBytes) {
      if (onTooLong === undefined) onLine(buffer);
      else onTooLong(buffer.length);
      buffer = '';
    }
  });
}
