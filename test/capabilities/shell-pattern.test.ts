import { describe, expect, it } from 'vitest';
import {
  type Capability,
  findEscalations,
  formatCommandLine,
  isGranted,
  matchesShellCommand,
  shellPatternCovers,
  splitShellWords,
} from '../../src/capabilities/index.ts';

const shell = (pattern: string): Capability => ({ kind: 'shell_exec', pattern });

describe('matchesShellCommand() matches argument by argument', () => {
  it('refuses "cat /ws/a.txt /etc/shadow" under "cat /ws/*": a "*" never spans two arguments', () => {
    expect(matchesShellCommand('cat /ws/*', 'cat /ws/a.txt')).toBe(true);
    expect(matchesShellCommand('cat /ws/*', 'cat /ws/a.txt /etc/shadow')).toBe(false);
    expect(isGranted([shell('cat /ws/*')], shell('cat /ws/a.txt /etc/shadow'))).toBe(false);
  });

  it('never lets a "*" stand for a ".." segment: "cat /ws/*" does not climb out of /ws', () => {
    for (const command of ['cat /ws/../etc/shadow', 'cat /ws/a/../../etc/shadow', 'cat /ws/..', "cat '/ws/x/../../etc/hostname'"]) {
      expect(matchesShellCommand('cat /ws/*', command)).toBe(false);
      expect(isGranted([shell('cat /ws/*')], shell(command))).toBe(false);
    }
    expect(matchesShellCommand('cat /ws/*', 'cat /ws/a..b.txt')).toBe(true);
    // An option's value counts: "=.." and "-C.." climb out too.
    expect(matchesShellCommand('make --directory=*', 'make --directory=..')).toBe(false);
    expect(matchesShellCommand('git -C* status', 'git -C.. status')).toBe(false);
    expect(matchesShellCommand('make --directory=*', 'make --directory=build')).toBe(true);
    // A grant that writes ".." allows as many as it writes, no more; "**" stands for any arguments, ".." ones too.
    expect(matchesShellCommand('cat /ws/../shared/*', 'cat /ws/../shared/a.txt')).toBe(true);
    expect(matchesShellCommand('cat /ws/../shared/*', 'cat /ws/../shared/../../etc/shadow')).toBe(false);
    expect(matchesShellCommand('git **', 'git -C ../other status')).toBe(true);
  });

  it('does not let a child\'s grant that writes ".." pass under a parent\'s that does not', () => {
    expect(shellPatternCovers('cat /ws/*', 'cat /ws/../*')).toBe(false);
    expect(shellPatternCovers('cat /ws/*', 'cat /ws/sub/*')).toBe(true);
    expect(shellPatternCovers('cat /ws/../*', 'cat /ws/../a.txt')).toBe(true);
  });

  it('lets a "*" match inside one argument, slashes and spaces of a quoted argument included', () => {
    expect(matchesShellCommand('cat /ws/*', 'cat /ws/reports/q4.txt')).toBe(true);
    expect(matchesShellCommand('cat /ws/*', "cat '/ws/my notes.txt'")).toBe(true);
    expect(matchesShellCommand('cat /ws/*', 'cat /etc/shadow')).toBe(false);
    expect(matchesShellCommand('git *', 'gitx status')).toBe(false);
  });

  it('reads "git *" as git with exactly one argument', () => {
    expect(matchesShellCommand('git *', 'git status')).toBe(true);
    expect(matchesShellCommand('git *', 'git')).toBe(false);
    expect(matchesShellCommand('git *', 'git commit -m x')).toBe(false);
    expect(matchesShellCommand('git *', "git ''")).toBe(true);
  });

  it('reads a bare "**" word as any number of whole arguments, none included', () => {
    for (const command of ['git', 'git status', 'git commit -m "fix bug"']) {
      expect(matchesShellCommand('git **', command)).toBe(true);
    }
    expect(matchesShellCommand('git **', 'gitk')).toBe(false);
    expect(matchesShellCommand('git ** --force', 'git push origin main --force')).toBe(true);
    expect(matchesShellCommand('git ** --force', 'git push --force origin')).toBe(false);
    expect(matchesShellCommand('git ** **', 'git a b c')).toBe(true);
    expect(matchesShellCommand('**', 'rm -rf /')).toBe(true);
  });

  it('reads a quoted "**" as one argument, like "*"', () => {
    expect(matchesShellCommand("git '**'", 'git status')).toBe(true);
    expect(matchesShellCommand("git '**'", 'git')).toBe(false);
    expect(matchesShellCommand("git '**'", 'git a b')).toBe(false);
  });

  it('reads the pattern "*" alone as any command, and a quoted "*" alone as any one-word command', () => {
    for (const command of ['ls', 'rm -rf /', "echo 'a b' c"]) {
      expect(matchesShellCommand('*', command)).toBe(true);
      expect(matchesShellCommand('  *  ', command)).toBe(true);
    }
    expect(matchesShellCommand("'*'", 'ls')).toBe(true);
    expect(matchesShellCommand("'*'", 'ls -la')).toBe(false);
  });

  it('lets a quoted pattern word hold spaces, matched as one argument', () => {
    expect(matchesShellCommand("git commit -m 'fix bug'", 'git commit -m "fix bug"')).toBe(true);
    expect(matchesShellCommand('git commit -m "fix bug"', "git commit -m 'fix bug'")).toBe(true);
    expect(matchesShellCommand("git commit -m 'fix bug'", 'git commit -m fix bug')).toBe(false);
    expect(matchesShellCommand("echo 'hello *'", 'echo "hello world"')).toBe(true);
    expect(matchesShellCommand("echo 'hello *'", 'echo hello world')).toBe(false);
  });

  it('matches the normal form of any argv with the pattern of the same text', () => {
    const argv = ['git', 'commit', '-m', "it's a fix; really", '', 'plain'];
    const line = formatCommandLine(argv);
    expect(matchesShellCommand(line, line)).toBe(true);
    expect(matchesShellCommand(line, formatCommandLine([...argv, 'extra']))).toBe(false);
  });

  it('never matches a command that does not split or holds no word, even under "*"', () => {
    for (const command of ['ls | wc', 'echo $HOME', "echo 'oops", '', '   ']) {
      expect(matchesShellCommand('*', command)).toBe(false);
      expect(isGranted([shell('*')], shell(command))).toBe(false);
    }
  });

  it('never matches with a pattern that does not split', () => {
    for (const pattern of ["ls 'oops", 'ls | wc', 'ls ?', '', '  ']) {
      expect(matchesShellCommand(pattern, 'ls')).toBe(false);
    }
  });
});

describe('shellPatternCovers() compares word by word', () => {
  it.each([
    ['git **', 'git status *'],
    ['git **', 'git'],
    ['git **', 'git **'],
    ['git **', 'git status **'],
    ['git **', 'git ** --force'],
    ['git *', 'git status'],
    ['git *', "git '**'"],
    ['cat /ws/*', 'cat /ws/reports/*'],
    ['*', 'rm -rf /'],
    ['*', '**'],
    ['**', '*'],
    ['*', 'git **'],
    ['** --force', 'git push ** --force'],
  ])('shellPatternCovers("%s", "%s") is true', (wider, narrower) => {
    expect(shellPatternCovers(wider, narrower)).toBe(true);
  });

  it.each([
    ['git *', 'git **'],
    ['git *', 'git'],
    ['git *', 'git a b'],
    ['git status', 'git *'],
    ['cat /ws/*', 'cat /ws/* /ws/*'],
    ['cat /ws/*', 'cat /*'],
    ['git **', '*'],
    ["'*'", '*'],
    ["git '**'", 'git **'],
    ['git ** --force', 'git **'],
    ['ls', "ls 'oops"],
    ["ls 'oops", 'ls'],
  ])('shellPatternCovers("%s", "%s") is false', (wider, narrower) => {
    expect(shellPatternCovers(wider, narrower)).toBe(false);
  });

  it('findEscalations() accepts "git status *" under "git **" and reports "git **" under "git *"', () => {
    expect(findEscalations([shell('git **')], [shell('git status *')])).toEqual([]);
    expect(findEscalations([shell('git *')], [shell('git **')])).toEqual([shell('git **')]);
  });

  it('never says covered when some command matches the narrower pattern but not the wider one', () => {
    // Every pattern of up to three words from a small vocabulary, against every argv of up to
    // four arguments over a small alphabet (an empty one and one with a space included).
    const patternWords = ['a', 'b', '*', 'a*', '**', "'**'", "'a b'"];
    const patterns: string[] = [];
    let layer = [''];
    for (let length = 1; length <= 3; length += 1) {
      layer = layer.flatMap((prefix) => patternWords.map((word) => (prefix === '' ? word : `${prefix} ${word}`)));
      patterns.push(...layer);
    }
    const argumentWords = ['a', 'b', 'ab', '', 'a b'];
    const commands: string[] = [];
    let argvLayer: string[][] = [[]];
    for (let length = 1; length <= 4; length += 1) {
      argvLayer = argvLayer.flatMap((argv) => argumentWords.map((word) => [...argv, word]));
      commands.push(...argvLayer.map(formatCommandLine));
    }
    const matched = new Map(patterns.map((pattern) => [pattern, commands.filter((command) => matchesShellCommand(pattern, command))]));
    let coveredPairs = 0;
    for (const wider of patterns) {
      const allowed = new Set(matched.get(wider));
      for (const narrower of patterns) {
        if (shellPatternCovers(wider, narrower)) {
          coveredPairs += 1;
          const escaping = matched.get(narrower)?.find((command) => !allowed.has(command));
          expect({ wider, narrower, escaping }).toEqual({ wider, narrower, escaping: undefined });
        }
      }
    }
    // The check above must have had something to check.
    expect(coveredPairs).toBeGreaterThan(patterns.length);
  });
});

describe('splitShellWords()', () => {
  it('keeps a bare "*" in pattern mode and refuses it in command mode', () => {
    expect(splitShellWords('cat /ws/*', 'pattern').words).toEqual([
      { text: 'cat', isBare: true },
      { text: '/ws/*', isBare: true },
    ]);
    expect(splitShellWords('cat /ws/*', 'command').problem).toEqual({ what: '"*"', position: 9, reason: 'a glob (no file names are expanded)' });
  });

  it('marks a quoted or escaped word as not bare', () => {
    expect(splitShellWords(`'**' "**" \\** **`, 'pattern').words?.map((word) => word.isBare)).toEqual([false, false, false, true]);
  });

  it('refuses "?" in pattern mode, saying it is no wildcard there', () => {
    expect(splitShellWords('ls ?', 'pattern').problem?.reason).toBe('no wildcard in a shell pattern (only "*" and "**" are)');
  });
});
