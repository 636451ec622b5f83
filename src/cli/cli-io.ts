import type { Readable } from 'node:stream';

/** What a CLI run talks to. Injected so tests can run commands in-process. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stdin: Readable;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
  };
}

/** Reads a stream to its end as UTF-8. */
export async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}
