import type { PatternCapabilityKind } from './capability.ts';
import { filePatternProblem } from './file-path.ts';
import { netPatternProblem } from './net-address.ts';
import { shellPatternProblem } from './shell-pattern.ts';

/** U+0000–U+001F and U+007F: no name, path, host or command a pattern stands for holds one. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * What is wrong with a grant's `pattern` for capabilities of `kind`, as the end of a message
 * (`expected …, got "…"`), or `undefined` when it is well formed. Every kind: not empty, no
 * control character. `net_connect`: a host glob with an optional port or `*`
 * (`netPatternProblem`); `file_read` / `file_write`: what `normalizeFilePattern` accepts;
 * `shell_exec`: splits into at least one word (`shellPatternProblem`). Used by the manifest's
 * `[capabilities]` and by `CapabilitySchema`, so every way in checks the same. Throws nothing.
 *
 * @example
 * ```ts
 * patternProblem('net_connect', '[::1'); // 'expected a host such as "api.openai.com" or "*.example.com:443", got "[::1" (unclosed "[")'
 * patternProblem('file_read', '/data/*'); // undefined
 * ```
 */
export function patternProblem(kind: PatternCapabilityKind, pattern: string): string | undefined {
  if (pattern === '') {
    return 'expected a non-empty pattern';
  }
  const control = CONTROL_CHARACTER.exec(pattern);
  if (control !== null) {
    return `expected a pattern without control characters, got ${JSON.stringify(pattern)} (${JSON.stringify(control[0])} at position ${control.index + 1})`;
  }
  switch (kind) {
    case 'net_connect':
      return netPatternProblem(pattern);
    case 'file_read':
    case 'file_write':
      return filePatternProblem(pattern);
    case 'shell_exec': {
      const problem = shellPatternProblem(pattern);
      return problem === undefined ? undefined : `expected a command pattern such as "git status" or "git **", got ${JSON.stringify(pattern)} (${problem})`;
    }
    case 'tool_invoke':
    case 'llm_query':
    case 'agent_message':
    case 'agent_kill':
    case 'memory_read':
    case 'memory_write':
    case 'env_read':
    case 'ofp_connect':
    case 'econ_transfer':
      return undefined;
  }
}
