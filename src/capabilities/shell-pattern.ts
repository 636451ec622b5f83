import { matchesPattern, patternCovers } from './pattern.ts';
import { splitCommandArgv, splitShellWords } from './shell-words.ts';

/**
 * `shell_exec` grants match a command argument by argument. The grant is split into words as a
 * command line is (`splitShellWords`, `pattern` mode: quotes group, so a word may hold spaces),
 * the command into its argv, and the two are matched word by word, each word with the one glob
 * matcher (`matchesPattern`), so a `*` never reaches past the argument it stands in:
 * `cat /ws/*` allows `cat /ws/a.txt` but not `cat /ws/a.txt /etc/shadow`.
 *
 * Two forms say more on purpose: a word written exactly `**` (bare, not quoted) matches any
 * number of whole arguments, none included (`git **` is git with any arguments); and a grant
 * that is `*` alone means any command, as spec/01's `ShellExec("*")` does.
 */

/**
 * A `..` path segment: after the start, a `/`, an `=` (`--directory=..`) or a short option
 * (`-C..`), and before the end or a `/`.
 */
const PARENT_SEGMENT = /(?:^|[/=]|^-[A-Za-z])\.\.(?=$|\/)/g;

/** How many `..` path segments `text` holds (`..`, `../x`, `x/../y`, `--dir=..`, `-C..`). */
function parentSegments(text: string): number {
  return text.match(PARENT_SEGMENT)?.length ?? 0;
}

/**
 * Whether the glob word `word` allows the argument `argument`. A wildcard never stands for a `..`
 * path segment: `cat /ws/*` allows `cat /ws/a.txt`, not `cat /ws/../etc/shadow`, which climbs out
 * of the folder the grant names. An argument may hold no more `..` segments than the word writes
 * itself (`cat /ws/../shared/*` allows `cat /ws/../shared/a`, not `cat /ws/../shared/../../etc/x`).
 */
function matchesArgument(word: string, argument: string): boolean {
  return matchesPattern(word, argument) && parentSegments(argument) <= parentSegments(word);
}

/** A pattern word that stands for any number of whole arguments. */
const ANY_ARGUMENTS = Symbol('**');

/** One word of a parsed grant: a glob for exactly one argument, or `ANY_ARGUMENTS`. */
type ShellPatternWord = string | typeof ANY_ARGUMENTS;

/**
 * The words of a `shell_exec` grant, or `undefined` when it does not split or has no words.
 * Runs of `**` collapse into one, which changes nothing it matches.
 */
function parseShellPattern(pattern: string): ShellPatternWord[] | undefined {
  const split = splitShellWords(pattern, 'pattern');
  if (split.words === undefined || split.words.length === 0) {
    return undefined;
  }
  const [only] = split.words;
  if (split.words.length === 1 && only?.isBare === true && only.text === '*') {
    return [ANY_ARGUMENTS];
  }
  const words: ShellPatternWord[] = [];
  for (const word of split.words) {
    const item = word.isBare && word.text === '**' ? ANY_ARGUMENTS : word.text;
    if (item !== ANY_ARGUMENTS || words.at(-1) !== ANY_ARGUMENTS) {
      words.push(item);
    }
  }
  return words;
}

/**
 * Whether the command line `command` (as `shell_exec` asks for it, e.g. `formatCommandLine`'s
 * output) is allowed by the grant `pattern`. A command or grant that does not split is never
 * matched. Throws nothing.
 *
 * @example
 * ```ts
 * matchesShellCommand('cat /ws/*', 'cat /ws/a.txt'); // true
 * matchesShellCommand('cat /ws/*', 'cat /ws/a.txt /etc/shadow'); // false: "*" stays in its argument
 * matchesShellCommand('cat /ws/*', 'cat /ws/../etc/shadow'); // false: "*" never stands for ".."
 * matchesShellCommand('git **', 'git commit -m "fix bug"'); // true
 * matchesShellCommand('*', 'rm -rf /'); // true: "*" alone is any command
 * ```
 */
export function matchesShellCommand(pattern: string, command: string): boolean {
  const words = parseShellPattern(pattern);
  const argv = splitCommandArgv(command);
  return words !== undefined && argv !== undefined && matchesWords(words, argv);
}

/** `reached[j]`: the pattern words seen so far match the first `j` arguments. O(words × argv) steps. */
function matchesWords(words: readonly ShellPatternWord[], argv: readonly string[]): boolean {
  let reached = argv.map(() => false).concat(false);
  reached[0] = true;
  for (const word of words) {
    const next = reached.map(() => false);
    for (let end = 0; end <= argv.length; end += 1) {
      next[end] =
        word === ANY_ARGUMENTS
          ? reached[end] === true || (end > 0 && next[end - 1] === true)
          : end > 0 && reached[end - 1] === true && matchesArgument(word, argv[end - 1] as string);
    }
    reached = next;
  }
  return reached[argv.length] === true;
}

/**
 * Whether the grant `wider` allows every command `narrower` allows: the inheritance test for
 * `shell_exec`. A `**` of `wider` may take any run of `narrower`'s words; a glob word of
 * `wider` takes exactly one glob word of `narrower` that it covers (`patternCovers`), never a
 * `**`, which may stand for no argument or several. Sound: whatever arguments `narrower`'s
 * words stand for, the `wider` words they were paired with take the same ones, so it never
 * answers true wrongly. It may answer false for equivalent grants written differently
 * (`* **` and `** *` both mean "at least one argument"), a refusal on the safe side. A grant
 * that does not split covers nothing and is covered by nothing.
 *
 * @example
 * ```ts
 * shellPatternCovers('git **', 'git status *'); // true
 * shellPatternCovers('git *', 'git **'); // false: "git **" also allows "git" and "git a b"
 * ```
 */
export function shellPatternCovers(wider: string, narrower: string): boolean {
  const outer = parseShellPattern(wider);
  const inner = parseShellPattern(narrower);
  if (outer === undefined || inner === undefined) {
    return false;
  }
  // covered[j]: the outer words seen so far take exactly the first `j` inner words.
  let covered = inner.map(() => false).concat(false);
  covered[0] = true;
  for (const word of outer) {
    const next = covered.map(() => false);
    for (let end = 0; end <= inner.length; end += 1) {
      const taken = inner[end - 1];
      next[end] =
        word === ANY_ARGUMENTS
          ? covered[end] === true || (end > 0 && next[end - 1] === true)
          : taken !== undefined &&
            taken !== ANY_ARGUMENTS &&
            covered[end - 1] === true &&
            patternCovers(word, taken) &&
            parentSegments(taken) <= parentSegments(word);
    }
    covered = next;
  }
  return covered[inner.length] === true;
}

/**
 * What is wrong with a `shell_exec` grant, for a message, or `undefined` when it splits into at
 * least one word: `"|" at position 4 is a pipe`.
 */
export function shellPatternProblem(pattern: string): string | undefined {
  const split = splitShellWords(pattern, 'pattern');
  if (split.problem !== undefined) {
    const { what, position, reason } = split.problem;
    const fix = reason === 'an unclosed quote' || reason.startsWith('a trailing') ? '' : `; quote it ('…') to match it literally`;
    return `${what} at position ${position} is ${reason}${fix}`;
  }
  return split.words.length === 0 ? 'no words' : undefined;
}
