import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { main } from '../../src/cli/index.ts';

/** What a CLI run printed and how it ended. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `loom <args>` in-process against the home folder `home`. */
export async function runCli(
  home: string,
  args: readonly string[],
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    stdin: Readable.from([options.stdin ?? '']),
    // HOME too, so a manifest's `~/…` workspace lands in the test's folder, not the real home.
    env: { LOOM_HOME: home, HOME: dirname(home), ...options.env },
    cwd: options.cwd ?? process.cwd(),
  });
  return { code, stdout, stderr };
}

/** Runs `loom <args> --json` and parses standard output, failing on a non-zero exit. */
export async function runCliJson<T>(home: string, args: readonly string[]): Promise<T> {
  const result = await runCli(home, [...args, '--json']);
  if (result.code !== 0) throw new Error(`loom ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
