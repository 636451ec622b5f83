import type { Readable } from 'node:stream';

/** What a CLI run talks to. Injected so tests can run commands in-process. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stdin: Readable;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Whether a person is at a terminal (notes and questions are for them; scripts get neither). */
  interactive?: boolean;
  /** Whether standard output is a terminal (the daemon prints readable log lines there, JSON lines otherwise). */
  stdoutIsTerminal?: boolean;
  /** How wide the terminal of standard error is, in columns, when it is one: long errors are wrapped to it. */
  columns?: number | undefined;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    interactive: process.stdin.isTTY && process.stderr.isTTY,
    stdoutIsTerminal: process.stdout.isTTY,
    columns: process.stderr.isTTY ? process.stderr.columns : undefined,
  };
}

/** Reads a stream to its end as UTF-8. */
export async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Exit statuses: done, anything else, bad input (invalid manifest, unknown agent, refused
 * capability, usage), interrupted by Ctrl-C (128 + SIGINT, as shells report it).
 */
export const EXIT = { ok: 0, failure: 1, badInput: 2, interrupted: 130 } as const;

/** Ends a command with an exit status and nothing more to say (what it says was printed already). */
export class ExitStatus extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`exit ${status}`);
    this.name = 'ExitStatus';
    this.status = status;
  }
}
