import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.ts';
import { formatErrorForTerminal } from '../../src/cli/wrap-error.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const examples = join(import.meta.dirname, '../../examples/agents');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-wrap-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

/** Runs `loom <args>` as at a terminal `columns` wide; what it wrote to standard error. */
async function stderrAt(columns: number | undefined, args: readonly string[]): Promise<string> {
  let stderr = '';
  await main(args, {
    stdout: () => undefined,
    stderr: (text) => (stderr += text),
    stdin: Readable.from(['']),
    env: { LOOM_HOME: home, HOME: dir.path },
    cwd: process.cwd(),
    columns,
  });
  return stderr;
}

describe('a long refusal at a terminal', () => {
  it("is wrapped to the terminal's width, the failed action and its reason on the first line, each further problem on lines of its own", async () => {
    expect((await runCli(home, ['agent', 'spawn', join(examples, 'coordinator.toml')])).code).toBe(0);
    const args = ['agent', 'spawn', join(examples, 'rogue-helper.toml'), '--parent', 'coordinator'];
    const wrapped = await stderrAt(80, args);
    const lines = wrapped.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^error: cannot spawn agent "rogue-helper" as a child of "coordinator": cannot$/);
    expect(lines[1]).toMatch(/^ {2}give a child agent capabilities its parent lacks/);
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(80);
    expect(lines.filter((line) => /^ {2}\[capabilities\]\.(network|shell|file_read) /.test(line))).toHaveLength(3);
    expect(lines.filter((line) => line.startsWith('  [model] calls model "openai-compatible/collector"'))).toHaveLength(1);
    // Not a word lost or added: the same words as the one long message.
    const plain = await stderrAt(undefined, args);
    expect(plain.split('\n')[0]?.length).toBeGreaterThan(200);
    expect(wrapped.split(/\s+/).join(' ')).toBe(plain.split(/\s+/).join(' ').replace(/; /g, ' '));
  });

  it('stays one line when it fits, and is wrapped at spaces, never inside a word', () => {
    expect(formatErrorForTerminal('agent "x" not found', 80)).toBe('error: agent "x" not found\n');
    expect(formatErrorForTerminal('cannot send to "writer": it is suspended; resume it with loom agent resume writer', 38)).toBe(
      'error: cannot send to "writer": it is\n  suspended\n  resume it with loom agent resume\n    writer\n',
    );
  });
});
