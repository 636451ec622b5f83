import { formatCommandLine, matchesShellCommand } from '../../capabilities/index.ts';
import { splitCommandLine } from './shell-command-line.ts';
import { ToolInputError } from './tool-input-error.ts';

/**
 * Why `shell_exec` may not run `commandLine` under the `granted` `shell_exec` patterns, and
 * which manifest entry would allow it: the program with any arguments (`git **`) or exactly this
 * command. A line that cannot be split gets the splitter's message instead. Throws nothing.
 *
 * @example
 * ```ts
 * explainShellRefusal('git push', ['ls', 'git status']);
 * // 'command "git push" is not granted (granted shell patterns: "ls", "git status"); add "git **" or "git push" to [capabilities].shell'
 * ```
 */
export function explainShellRefusal(commandLine: string, grantedPatterns: readonly string[]): string {
  let argv: string[];
  try {
    argv = splitCommandLine(commandLine);
  } catch (error) {
    return error instanceof ToolInputError ? error.message : `cannot run command ${JSON.stringify(commandLine)}`;
  }
  const normal = formatCommandLine(argv);
  if (grantedPatterns.some((pattern) => matchesShellCommand(pattern, normal))) {
    return `command "${normal}" is granted by [capabilities].shell; it was refused for another reason (exec_policy.allow_shell, or tools)`;
  }
  const granted =
    grantedPatterns.length === 0
      ? 'no shell patterns are granted'
      : `granted shell patterns: ${grantedPatterns.map((pattern) => JSON.stringify(pattern)).join(', ')}`;
  const program = formatCommandLine(argv.slice(0, 1));
  const suggestions = argv.length === 1 ? `"${normal}" (and "${program} **" for any arguments)` : `"${program} **" or "${normal}"`;
  return `command "${normal}" is not granted (${granted}); add ${suggestions} to [capabilities].shell`;
}
