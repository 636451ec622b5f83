/**
 * The one reading of a shell command line, shared by the `shell_exec` tool (which runs argv) and
 * by `shell_exec` grants (which are matched word by word against that argv). Nothing here runs a
 * shell or throws: callers phrase the problem in their own words.
 */

/** One word of a split line. */
export interface ShellWord {
  /** The word with its quotes and escapes removed. */
  text: string;
  /** Whether it was written with no quote or backslash at all (so `**` is the bare wildcard, `'**'` is not). */
  isBare: boolean;
}

/** Why a line does not split: what stands where, and what a shell would have done with it. */
export interface ShellSyntaxProblem {
  /** The offending text, quoted for a message: `"|"`, `"$HOME"`. */
  what: string;
  /** 1-based position in the line. */
  position: number;
  /** What it is: `a pipe`, `an unclosed quote`. */
  reason: string;
}

/** The words of a line, or the first problem in it. A line of only whitespace has no words and no problem. */
export type ShellSplit = { words: ShellWord[]; problem?: undefined } | { words?: undefined; problem: ShellSyntaxProblem };

/**
 * `command`: a line to run, where every shell character outside quotes is refused. `pattern`:
 * a `shell_exec` grant, where `*` outside quotes is kept (it is the grant's wildcard) and `?`
 * is refused, since it is no wildcard there.
 */
export type ShellSplitMode = 'command' | 'pattern';

/** Characters that only a shell would act on; outside quotes they are refused, since none runs. */
const OPERATOR_CHARACTERS: ReadonlyMap<string, string> = new Map([
  ['|', 'a pipe'],
  [';', 'a command separator'],
  ['&', 'a background or "&&" operator'],
  ['>', 'a redirection'],
  ['<', 'a redirection'],
  ['`', 'a command substitution'],
  ['(', 'a subshell'],
  [')', 'a subshell'],
  ['\n', 'a line break (a command separator)'],
  ['\r', 'a line break (a command separator)'],
  ['*', 'a glob (no file names are expanded)'],
  ['?', 'a glob (no file names are expanded)'],
]);

const PATTERN_REASONS: ReadonlyMap<string, string> = new Map([['?', 'no wildcard in a shell pattern (only "*" and "**" are)']]);

const WHITESPACE = new Set([' ', '\t']);

/** What a double-quoted backslash may escape, as in POSIX sh; before anything else it stays. */
const DOUBLE_QUOTE_ESCAPABLE = new Set(['\\', '"', '$', '`']);

/** A character after `$` that makes a shell expand it. */
const EXPANSION_START = /[A-Za-z0-9_{(@*#?$!-]/;

/**
 * Splits one line into words the way a POSIX shell would for a simple command, without running
 * a shell: whitespace (space, tab) separates words; `'…'` is literal; `"…"` is literal except
 * that `\` escapes `\`, `"`, `$` and a backtick; outside quotes `\` escapes any character (and
 * `\` + line break joins lines). Nothing is expanded, so anything a shell would act on is a
 * problem rather than passed on silently: outside quotes `|`, `;`, `&`, `>`, `<`, backticks,
 * parentheses, line breaks, the globs `*` and `?` (in `pattern` mode `*` is kept), a `#`
 * starting a word and a `~` starting one; outside single quotes `$(`, `${`, `$name`, `$1` and
 * the like, and a backtick. An unclosed quote and a trailing `\` are problems too.
 *
 * @example
 * ```ts
 * splitShellWords(`git commit -m "fix: don't panic"`, 'command').words?.map((word) => word.text);
 * // ['git', 'commit', '-m', "fix: don't panic"]
 * splitShellWords('ls | wc -l', 'command').problem; // { what: '"|"', position: 4, reason: 'a pipe' }
 * ```
 */
export function splitShellWords(line: string, mode: ShellSplitMode): ShellSplit {
  const words: ShellWord[] = [];
  let text = '';
  let inWord = false;
  let isBare = true;
  let index = 0;
  const problem = (what: string, reason: string, at = index): ShellSplit => ({ problem: { what, position: at + 1, reason } });
  const expansionAt = (at: number): ShellSplit | undefined => {
    const next = line[at + 1];
    return next !== undefined && EXPANSION_START.test(next) ? problem(`"$${next}"`, 'a shell expansion', at) : undefined;
  };
  while (index < line.length) {
    const character = line[index] as string;
    if (WHITESPACE.has(character)) {
      if (inWord) {
        words.push({ text, isBare });
        text = '';
        inWord = false;
        isBare = true;
      }
      index += 1;
      continue;
    }
    if (character === "'") {
      const end = line.indexOf("'", index + 1);
      if (end < 0) {
        return problem('"\'"', 'an unclosed quote');
      }
      text += line.slice(index + 1, end);
      inWord = true;
      isBare = false;
      index = end + 1;
      continue;
    }
    if (character === '"') {
      let inner = index + 1;
      for (;;) {
        const quoted = line[inner];
        if (quoted === undefined) {
          return problem("'\"'", 'an unclosed quote');
        } else if (quoted === '"') {
          break;
        } else if (quoted === '\\' && DOUBLE_QUOTE_ESCAPABLE.has(line[inner + 1] ?? '')) {
          text += line[inner + 1];
          inner += 2;
        } else if (quoted === '\\' && line[inner + 1] === '\n') {
          inner += 2;
        } else {
          if (quoted === '`') {
            return problem('"`"', OPERATOR_CHARACTERS.get('`') as string, inner);
          }
          const expansion = quoted === '$' ? expansionAt(inner) : undefined;
          if (expansion !== undefined) {
            return expansion;
          }
          text += quoted;
          inner += 1;
        }
      }
      inWord = true;
      isBare = false;
      index = inner + 1;
      continue;
    }
    if (character === '\\') {
      const next = line[index + 1];
      if (next === undefined) {
        return problem('"\\"', 'a trailing escape with nothing to escape');
      }
      index += 2;
      if (next !== '\n') {
        text += next;
        inWord = true;
        isBare = false;
      }
      continue;
    }
    const operator = mode === 'pattern' && character === '*' ? undefined : OPERATOR_CHARACTERS.get(character);
    if (operator !== undefined) {
      return problem(JSON.stringify(character), (mode === 'pattern' ? PATTERN_REASONS.get(character) : undefined) ?? operator);
    }
    const expansion = character === '$' ? expansionAt(index) : undefined;
    if (expansion !== undefined) {
      return expansion;
    }
    if (!inWord && character === '#') {
      return problem('"#"', 'a comment');
    }
    if (!inWord && character === '~') {
      return problem('"~"', 'a home folder expansion');
    }
    text += character;
    inWord = true;
    index += 1;
  }
  if (inWord) {
    words.push({ text, isBare });
  }
  return { words };
}

/**
 * The argv of a command line (see `splitShellWords`, `command` mode), or `undefined` when it
 * does not split or holds no word: what a `shell_exec` value means. Throws nothing.
 */
export function splitCommandArgv(line: string): string[] | undefined {
  const split = splitShellWords(line, 'command');
  return split.words === undefined || split.words.length === 0 ? undefined : split.words.map((word) => word.text);
}

/** Characters that make a word need quoting to read back as the same single word. */
const NEEDS_QUOTING = /[\s'"\\|;&<>`()*?$#~]/;

/**
 * The normal form of argv, the text `shell_exec` asks for: the words joined with single spaces,
 * each word that is empty or holds whitespace, a quote or a shell character wrapped in single
 * quotes (an inner `'` written `'\''`). Plain commands come out as typed (`git status`), and two
 * different argv never share a normal form: `splitCommandArgv(formatCommandLine(argv))` is
 * `argv`. Read as a grant, the normal form allows exactly that command (a `*` inside an
 * argument stays a wildcard there, so it allows a little more).
 *
 * @example
 * ```ts
 * formatCommandLine(['git', 'commit', '-m', 'fix bug']); // "git commit -m 'fix bug'"
 * ```
 */
export function formatCommandLine(argv: readonly string[]): string {
  return argv.map((word) => (word === '' || NEEDS_QUOTING.test(word) ? `'${word.replaceAll("'", "'\\''")}'` : word)).join(' ');
}
