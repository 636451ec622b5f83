import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

/**
 * The README promises that every command has `--help` with an example. This walks the real
 * program, as `main` builds it, and reads each command's help as `--help` prints it (with the
 * text added by addHelpText), so a new command without an example fails here.
 */

/** The program `main` parses with. */
function realProgram(): Command {
  return buildProgram({ stdout: () => undefined, stderr: () => undefined, stdin: Readable.from(['']), env: {}, cwd: process.cwd() });
}

interface Found {
  path: string[];
  command: Command;
}

function allCommands(command: Command, path: string[] = []): Found[] {
  return command.commands.flatMap((child) => {
    const childPath = [...path, child.name()];
    return [{ path: childPath, command: child }, ...allCommands(child, childPath)];
  });
}

/** The `$ loom …` lines of an Example section (the project's format: "Example:" then "  $ loom …"). */
function exampleLines(help: string): string[] {
  return help
    .split('\n')
    .filter((line) => /^ {2}\$ loom /.test(line))
    .map((line) =>
      line
        .replace(/^ {2}\$ /, '')
        .replace(/\s+#\s.*$/, '')
        .replace(/\s\|\s.*$/, '')
        .trim(),
    );
}

/** Shell-like words: quoted parts stay with their word (`--input topic="heat pumps"` is two words). */
function words(line: string): string[] {
  return line.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g) ?? [];
}

/** What is wrong with an example `loom …` line for this program, or undefined when it parses. */
function problemOf(program: Command, line: string): string | undefined {
  const [, ...args] = words(line);
  const chain: Command[] = [program];
  const current = (): Command => chain.at(-1) ?? program;
  const given = new Set<string>();
  let positionals = 0;
  let firstPositional = '';
  for (let index = 0; index < args.length; index++) {
    const word = args[index] ?? '';
    if (word.startsWith('-') && word !== '-') {
      const flag = word.split('=')[0] ?? word;
      if (flag === '-h' || flag === '--help') continue;
      const option = chain
        .slice()
        .reverse()
        .flatMap((command) => command.options)
        .find((candidate) => candidate.short === flag || candidate.long === flag);
      if (option === undefined) return `"${current().name()}" has no option ${flag}`;
      given.add(option.attributeName());
      if ((option.required || option.optional) && !word.includes('=')) index++;
      continue;
    }
    const sub = positionals === 0 ? current().commands.find((command) => command.name() === word || command.aliases().includes(word)) : undefined;
    if (sub !== undefined) chain.push(sub);
    else if (positionals++ === 0) firstPositional = word;
  }
  const command = current();
  if (command.commands.length > 0 && positionals > 0) return `"${command.name()}" has no subcommand "${firstPositional}"`;
  const expected = command.registeredArguments;
  const required = expected.filter((argument) => argument.required).length;
  const variadic = expected.some((argument) => argument.variadic);
  if (positionals < required) return `"${command.name()}" needs ${required} argument(s), the example gives ${positionals}`;
  if (!variadic && positionals > expected.length) return `"${command.name()}" takes ${expected.length} argument(s), the example gives ${positionals}`;
  const missing = command.options.filter((option) => option.mandatory && !given.has(option.attributeName()));
  if (missing.length > 0) return `"${command.name()}" requires ${missing.map((option) => option.long ?? option.flags).join(', ')}`;
  return undefined;
}

let program: Command;
let commands: Found[];
let dir: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  program = realProgram();
  commands = allCommands(program);
  dir = await makeTempDir('loom-cli-help-');
});
afterAll(async () => {
  await dir.remove();
});

const helpOf = (path: readonly string[]) => runCli(join(dir.path, 'home'), [...path, '--help']);

describe('loom <command> --help', () => {
  it('finds the whole command tree', () => {
    const names = commands.map((found) => found.path.join(' '));
    // A few from each corner, so a walk that found nothing cannot pass.
    expect(names).toEqual(
      expect.arrayContaining([
        'init',
        'agent spawn',
        'channels status',
        'mcp servers',
        'a2a list',
        'package uninstall',
        'tools demote',
        'model serve',
        'store migrate',
      ]),
    );
    expect(names.length).toBeGreaterThan(50);
  });

  it('shows an example for loom itself and every command and subcommand', async () => {
    const without: string[] = [];
    for (const path of [[], ...commands.map((found) => found.path)]) {
      const result = await helpOf(path);
      expect(result.code, `loom ${path.join(' ')} --help`).toBe(0);
      expect(result.stdout).toContain('Usage: loom');
      if (!/\nExample:\n {2}\$ loom \S/.test(result.stdout)) without.push(`loom ${path.join(' ')}`.trim());
    }
    expect(without, 'commands whose --help has no "Example:" section with a "$ loom …" line').toEqual([]);
  });

  it('gives examples that name real commands, options and arguments', async () => {
    const wrong: string[] = [];
    for (const path of [[], ...commands.map((found) => found.path)]) {
      const { stdout } = await helpOf(path);
      for (const line of exampleLines(stdout)) {
        const problem = problemOf(program, line);
        if (problem !== undefined) wrong.push(`loom ${path.join(' ')} --help: "${line}": ${problem}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('refuses an example naming what does not exist (the check above can fail)', () => {
    expect(problemOf(program, 'loom agent lst')).toBe('"agent" has no subcommand "lst"');
    expect(problemOf(program, 'loom agent list --bogus')).toBe('"list" has no option --bogus');
    expect(problemOf(program, 'loom package show')).toBe('"show" needs 1 argument(s), the example gives 0');
    expect(problemOf(program, 'loom tools forge slugify.json')).toBe('"forge" requires --agent');
    expect(problemOf(program, 'loom --url http://10.0.0.5:4200 package run chief-of-staff deep-dive --input topic="heat pumps"')).toBeUndefined();
  });

  it('describes every command, option and argument starting with a lower-case letter', () => {
    const capitalised: string[] = [];
    for (const { path, command } of commands) {
      const name = `loom ${path.join(' ')}`;
      if (!/^[a-z]/.test(command.description())) capitalised.push(`${name}: "${command.description()}"`);
      for (const option of command.options) if (!/^[a-z]/.test(option.description)) capitalised.push(`${name} ${option.flags}: "${option.description}"`);
      for (const argument of command.registeredArguments) {
        if (argument.description !== '' && !/^[a-z]/.test(argument.description)) capitalised.push(`${name} <${argument.name()}>: "${argument.description}"`);
      }
    }
    expect(capitalised).toEqual([]);
  });
});
