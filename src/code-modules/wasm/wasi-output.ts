import { cutLine, STDERR_LINE_CHARS } from '../cut-line.ts';

/** The most of a WASI module's stderr kept per message: its last this many bytes (for the log and an exit's error). */
export const WASI_STDERR_KEPT_BYTES = 64 * 1024;
/** A WASI module that writes more than this to stderr in one message is stopped (a `too-large` fault). */
export const WASI_STDERR_LIMIT_BYTES = 16 * 1024 * 1024;
/** The most lines of a WASI module's stderr logged per message: its last ones, after a note of what was left out. */
export const WASI_STDERR_LOGGED_LINES = 100;

const STDOUT = 1;
const STDERR = 2;
// WASI preview 1 errno values.
const ERRNO_SUCCESS = 0;
const ERRNO_FAULT = 21;
const ERRNO_SPIPE = 70;
const IOVEC_BYTES = 8;

type Call = (...args: number[]) => number;

/** Options for {@link createWasiOutput}. */
export interface WasiOutputOptions {
  /** The most the module may write to stdout, its reply (`[code].max_reply_bytes`). */
  maxReplyBytes: number;
  /** The instance's memory, once there is one. */
  memory: () => WebAssembly.Memory | undefined;
  /** The error that stops the module, thrown out of the write that crossed a limit. */
  tooLarge: (message: string) => Error;
}

/** A WASI module's stdout and stderr for one message, held in memory and bounded as it writes. */
export interface WasiOutput {
  /** `wasiImport` (node:wasi's functions) with writes to stdout and stderr answered here instead. */
  imports(wasiImport: Record<string, WebAssembly.ImportValue>): Record<string, WebAssembly.ImportValue>;
  /** What the module wrote to stdout. */
  stdout(): Uint8Array;
  /** The lines of stderr kept (the end of it), each cut at {@link STDERR_LINE_CHARS}; blank lines left out. */
  stderrLines(): string[];
  /** What to log of stderr: a note of what was left out when anything was, then its last {@link WASI_STDERR_LOGGED_LINES} lines. */
  stderrLog(): string[];
}

/**
 * Answers a WASI module's writes to stdout and stderr itself, so that no output reaches the disk
 * and a limit is enforced inside the write that crosses it: past `maxReplyBytes` of stdout or
 * {@link WASI_STDERR_LIMIT_BYTES} of stderr, the write throws `tooLarge(…)`, which unwinds the
 * module there and then. Of stderr only the last {@link WASI_STDERR_KEPT_BYTES} are kept.
 * Positioned writes (`fd_pwrite`) to either fail with `ESPIPE`, as on a pipe.
 */
export function createWasiOutput(options: WasiOutputOptions): WasiOutput {
  const { maxReplyBytes, memory, tooLarge } = options;
  let stdout = new Uint8Array(Math.min(maxReplyBytes, 64 * 1024));
  let stdoutLength = 0;
  let stderr: Uint8Array | undefined;
  /** Where the next byte of stderr goes in `stderr`, a ring once it has filled. */
  let stderrEnd = 0;
  let stderrTotal = 0;

  function keepStdout(bytes: Uint8Array): void {
    if (stdoutLength + bytes.length > stdout.length) {
      const grown = new Uint8Array(Math.min(maxReplyBytes, Math.max(stdout.length * 2, stdoutLength + bytes.length)));
      grown.set(stdout.subarray(0, stdoutLength));
      stdout = grown;
    }
    stdout.set(bytes, stdoutLength);
    stdoutLength += bytes.length;
  }

  function keepStderr(bytes: Uint8Array): void {
    stderr ??= new Uint8Array(WASI_STDERR_KEPT_BYTES);
    stderrTotal += bytes.length;
    if (bytes.length >= WASI_STDERR_KEPT_BYTES) {
      stderr.set(bytes.subarray(bytes.length - WASI_STDERR_KEPT_BYTES));
      stderrEnd = 0;
      return;
    }
    const first = Math.min(bytes.length, WASI_STDERR_KEPT_BYTES - stderrEnd);
    stderr.set(bytes.subarray(0, first), stderrEnd);
    stderr.set(bytes.subarray(first), 0);
    stderrEnd = (stderrEnd + bytes.length) % WASI_STDERR_KEPT_BYTES;
  }

  function stderrTail(): Uint8Array {
    if (stderr === undefined) return new Uint8Array();
    if (stderrTotal < WASI_STDERR_KEPT_BYTES) return stderr.subarray(0, stderrTotal);
    const tail = new Uint8Array(WASI_STDERR_KEPT_BYTES);
    tail.set(stderr.subarray(stderrEnd));
    tail.set(stderr.subarray(0, stderrEnd), WASI_STDERR_KEPT_BYTES - stderrEnd);
    return tail;
  }

  /** `fd_write(fd, iovs, iovsLength, written)` to stdout or stderr. */
  function write(fd: number, iovsPointer: number, iovsLength: number, writtenPointer: number): number {
    const current = memory();
    if (current === undefined) return ERRNO_FAULT;
    const size = current.buffer.byteLength;
    const iovs = iovsPointer >>> 0;
    const count = iovsLength >>> 0;
    const written = writtenPointer >>> 0;
    if (iovs + count * IOVEC_BYTES > size || written + 4 > size) return ERRNO_FAULT;
    const view = new DataView(current.buffer);
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (let index = 0; index < count; index += 1) {
      const pointer = view.getUint32(iovs + index * IOVEC_BYTES, true);
      const length = view.getUint32(iovs + index * IOVEC_BYTES + 4, true);
      if (pointer + length > size) return ERRNO_FAULT;
      chunks.push(new Uint8Array(current.buffer, pointer, length));
      total += length;
    }
    if (fd === STDOUT) {
      if (stdoutLength + total > maxReplyBytes)
        throw tooLarge(`the module wrote more than its limit of ${maxReplyBytes} bytes ([code].max_reply_bytes) to stdout and was stopped`);
      for (const chunk of chunks) keepStdout(chunk);
    } else {
      for (const chunk of chunks) keepStderr(chunk);
      if (stderrTotal > WASI_STDERR_LIMIT_BYTES) {
        throw tooLarge(
          `the module wrote more than ${WASI_STDERR_LIMIT_BYTES} bytes to stderr, the most Loom takes from a module in one message, and was stopped`,
        );
      }
    }
    view.setUint32(written, total, true);
    return ERRNO_SUCCESS;
  }

  /** The kept lines of stderr; one the kept tail begins in the middle of starts with "…". */
  function keptLines(): string[] {
    const lines = new TextDecoder('utf-8').decode(stderrTail()).split('\n');
    if (stderrTotal > WASI_STDERR_KEPT_BYTES) lines[0] = `…${lines[0] ?? ''}`;
    return lines.filter((line) => line.trim() !== '' && line !== '…');
  }

  return {
    imports(wasiImport) {
      const { fd_write: fdWrite, fd_pwrite: fdPwrite } = wasiImport as Record<string, Call>;
      return {
        ...wasiImport,
        fd_write: (fd: number, iovs: number, iovsLength: number, written: number): number =>
          fd === STDOUT || fd === STDERR ? write(fd, iovs, iovsLength, written) : (fdWrite as Call)(fd, iovs, iovsLength, written),
        fd_pwrite: (fd: number, ...rest: number[]): number => (fd === STDOUT || fd === STDERR ? ERRNO_SPIPE : (fdPwrite as Call)(fd, ...rest)),
      };
    },
    stdout: () => stdout.subarray(0, stdoutLength),
    stderrLines: () => keptLines().map(cutLine),
    stderrLog() {
      const lines = keptLines();
      const shown = lines.slice(-WASI_STDERR_LOGGED_LINES);
      const log = shown.map(cutLine);
      const cutAny = shown.some((line) => line.length > STDERR_LINE_CHARS);
      if (stderrTotal <= WASI_STDERR_KEPT_BYTES && shown.length === lines.length && !cutAny) return log;
      const shownBytes = shown.reduce((sum, line) => sum + Buffer.byteLength(line.slice(0, STDERR_LINE_CHARS)) + 1, 0);
      const note =
        `stderr: ${Math.max(0, stderrTotal - shownBytes)} of ${stderrTotal} bytes left out of the log ` +
        `(Loom logs at most the last ${WASI_STDERR_LOGGED_LINES} lines and ${WASI_STDERR_KEPT_BYTES} bytes of a module's stderr per message, each line cut at ${STDERR_LINE_CHARS} characters)`;
      return [note, ...log];
    },
  };
}
