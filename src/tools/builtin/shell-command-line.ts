import { splitShellWords } from '../../capabilities/index.ts';
import { ToolInputError } from './tool-input-error.ts';

/**
 * Splits one command line into argv the way a POSIX shell would for a simple command, without
 * running a shell (the rules are `splitShellWords`'s, shared with `shell_exec` grants): whitespace
 * separates words; `'…'` is literal; `"…"` is literal except that `\` escapes `\`, `"`, `$` and
 * a backtick; outside quotes `\` escapes any character. Anything a shell would act on is
 * refused rather than passed on silently: pipes, separators, redirections, substitutions,
 * subshells, line breaks, the globs `*` and `?`, comments, `~` and `$` expansions.
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
  const split = splitShellWords(line, 'command');
  if (split.problem !== undefined) {
    const { what, position, reason } = split.problem;
    throw new ToolInputError(
      `cannot run command ${JSON.stringify(line)}: ${what} at position ${position} is ${reason}, and commands run without a shell; ` +
        `quote it ('…') to pass it literally, or run one plain command`,
    );
  }
  if (split.words.length === 0) {
    throw new ToolInputError(`cannot run command ${JSON.stringify(line)}: it holds no command`);
  }
  return split.words.map((word) => word.text);
}
