import { ToolInputError } from './tool-input-error.ts';

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

const WHITESPACE = new Set([' ', '\t']);

/** What a double-quoted backslash may escape, as in POSIX sh; before anything else it stays. */
const DOUBLE_QUOTE_ESCAPABLE = new Set(['\\', '"', '$', '`']);

/**
 * Splits one command line into argv the way a POSIX shell would for a simple command, without
 * running a shell: whitespace separates words; `'…'` is literal; `"…"` is literal except that
 * `\` escapes `\`, `"`, `$` and a backtick; outside quotes `\` escapes any character (and
 * `\` + line break joins lines). Nothing is expanded, so anything a shell would act on is
 * refused rather than passed on silently: outside quotes `|`, `;`, `&`, `>`, `<`, backticks,
 * parentheses, line breaks, the globs `*` and `?`, a `#` starting a word and a `~` starting one;
 * outside single quotes `$(`, `${`, `$name`, `$1` and the like, and a backtick.
 *
 * Throws `ToolInputError` for refused syntax, an unclosed quote, a trailing `\`, or a line
 * with no words; the message names the character and says to quote it.
 *
 * @example
 * ```ts
 * splitCommandLine(`git commit -m "fix: don't \\"panic\\""`); // ['git', 'commit', '-m', 'fix: don\'t "panic"']
 * splitCommandLine('ls | wc -l'); // throws: a pipe
 * ```
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let index = 0;
  const refuse = (what: string, reason: string): never => {
    throw new ToolInputError(
      `cannot run command ${JSON.stringify(line)}: ${what} at position ${index + 1} is ${reason}, and commands run without a shell; ` +
        `quote it ('…') to pass it literally, or run one plain command`,
    );
  };
  const refuseExpansion = (): void => {
    const next = line[index + 1];
    if (next !== undefined && /[A-Za-z0-9_{(@*#?$!-]/.test(next)) {
      refuse(`"$${next}"`, 'a shell expansion');
    }
  };
  while (index < line.length) {
    const character = line[index] as string;
    if (WHITESPACE.has(character)) {
      if (inWord) {
        words.push(word);
        word = '';
        inWord = false;
      }
      index += 1;
      continue;
    }
    if (character === "'") {
      const end = line.indexOf("'", index + 1);
      if (end < 0) {
        refuse('"\'"', 'an unclosed quote');
      }
      word += line.slice(index + 1, end);
      inWord = true;
      index = end + 1;
      continue;
    }
    if (character === '"') {
      index += 1;
      for (;;) {
        const inner = line[index];
        if (inner === undefined) {
          index = line.lastIndexOf('"');
          refuse('\'"\'', 'an unclosed quote');
        } else if (inner === '"') {
          break;
        } else if (inner === '\\' && line[index + 1] !== undefined && DOUBLE_QUOTE_ESCAPABLE.has(line[index + 1] as string)) {
          word += line[index + 1];
          index += 2;
        } else if (inner === '\\' && line[index + 1] === '\n') {
          index += 2;
        } else {
          if (inner === '`') {
            refuse('"`"', OPERATOR_CHARACTERS.get('`') as string);
          }
          if (inner === '$') {
            refuseExpansion();
          }
          word += inner;
          index += 1;
        }
      }
      inWord = true;
      index += 1;
      continue;
    }
    if (character === '\\') {
      const next = line[index + 1];
      if (next === undefined) {
        refuse('"\\"', 'a trailing escape with nothing to escape');
      } else if (next === '\n') {
        index += 2;
        continue;
      }
      word += next;
      inWord = true;
      index += 2;
      continue;
    }
    const operator = OPERATOR_CHARACTERS.get(character);
    if (operator !== undefined) {
      refuse(JSON.stringify(character), operator);
    }
    if (character === '$') {
      refuseExpansion();
    }
    if (!inWord && character === '#') {
      refuse('"#"', 'a comment');
    }
    if (!inWord && character === '~') {
      refuse('"~"', 'a home folder expansion');
    }
    word += character;
    inWord = true;
    index += 1;
  }
  if (inWord) {
    words.push(word);
  }
  if (words.length === 0) {
    throw new ToolInputError(`cannot run command ${JSON.stringify(line)}: it holds no command`);
  }
  return words;
}

/** Characters that make a word need quoting to read back as the same single word. */
const NEEDS_QUOTING = /[\s'"\\|;&<>`()*?$#~]/;

/**
 * The normal form of argv, the text `shell_exec` capabilities are matched against: the words
 * joined with single spaces, each word that is empty or holds whitespace, a quote or a shell
 * character wrapped in single quotes (an inner `'` written `'\''`). Plain commands come out as
 * typed (`git status`), so grants like `git *` or `ls` match them, and two different argv never
 * share a normal form. `splitCommandLine(formatCommandLine(argv))` is `argv`.
 *
 * @example
 * ```ts
 * formatCommandLine(['git', 'commit', '-m', 'fix bug']); // "git commit -m 'fix bug'"
 * ```
 */
export function formatCommandLine(argv: readonly string[]): string {
  return argv.map((word) => (word === '' || NEEDS_QUOTING.test(word) ? `'${word.replaceAll("'", "'\\''")}'` : word)).join(' ');
}
