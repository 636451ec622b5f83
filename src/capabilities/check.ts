import type { Capability, CapabilityKind, PatternCapabilityKind } from './capability.ts';
import { matchesFilePath } from './file-path.ts';
import { isAmount, spendingAuthority, tokenCap } from './limits.ts';
import { matchesNetAddress } from './net-address.ts';
import { matchesPattern, patternCovers } from './pattern.ts';
import { matchesShellCommand } from './shell-pattern.ts';

/**
 * Whether the `granted` capabilities allow the action `required` describes. Deny by default:
 * true only when a granted capability of the same kind matches (or `tool_all`, for a tool).
 *
 * `required` names the concrete thing asked for, not a pattern: the path (`file_read`,
 * `file_write`, absolute; normalised before matching, relative paths denied), the `host` or
 * `host:port` (`net_connect`), the port (`net_listen`), the command line (`shell_exec`, split
 * into argv and matched argument by argument, see `matchesShellCommand`), the tool, model,
 * agent, memory scope, variable or peer name. A `*` in it is an ordinary character. Asking for
 * `tool_all` asks to use every tool. Numeric kinds carry the amount asked for: `llm_max_tokens` is
 * granted when no cap is granted or the smallest cap is at least the amount; `econ_spend` when
 * some granted `econ_spend` is at least the amount (with none, nothing may be spent). A
 * malformed value (empty, a bad address, a command line that does not split, a negative or NaN
 * amount) is denied. Throws nothing.
 *
 * @example
 * ```ts
 * const granted: Capability[] = [{ kind: 'file_read', pattern: '/data/*' }];
 * isGranted(granted, { kind: 'file_read', pattern: '/data/reports/q4.json' }); // true
 * isGranted(granted, { kind: 'file_read', pattern: '/data/../etc/passwd' }); // false
 * ```
 */
export function isGranted(granted: readonly Capability[], required: Capability): boolean {
  switch (required.kind) {
    case 'file_read':
    case 'file_write':
      return somePattern(granted, required.kind, matchesFilePath, required.pattern);
    case 'net_connect':
      return somePattern(granted, required.kind, matchesNetAddress, required.pattern);
    case 'net_listen':
      return granted.some((capability) => capability.kind === 'net_listen' && capability.port === required.port);
    case 'tool_invoke':
      return required.pattern !== '' && (holds(granted, 'tool_all') || somePattern(granted, 'tool_invoke', matchesPattern, required.pattern));
    case 'tool_all':
      return holds(granted, 'tool_all') || somePattern(granted, 'tool_invoke', patternCovers, '*');
    case 'llm_max_tokens':
      return isAmount(required.max_tokens) && required.max_tokens <= tokenCap(granted);
    case 'econ_spend': {
      const authority = spendingAuthority(granted);
      return isAmount(required.max_usd) && authority !== undefined && required.max_usd <= authority.max_usd;
    }
    case 'agent_spawn':
    case 'ofp_discover':
    case 'ofp_advertise':
    case 'econ_earn':
      return holds(granted, required.kind);
    case 'shell_exec':
      return somePattern(granted, required.kind, matchesShellCommand, required.pattern);
    case 'llm_query':
    case 'agent_message':
    case 'agent_kill':
    case 'memory_read':
    case 'memory_write':
    case 'env_read':
    case 'ofp_connect':
    case 'econ_transfer':
      return required.pattern !== '' && somePattern(granted, required.kind, matchesPattern, required.pattern);
  }
}

/** Whether any of `capabilities` is of `kind`. */
export function holds(capabilities: readonly Capability[], kind: CapabilityKind): boolean {
  for (const capability of capabilities) if (capability.kind === kind) return true;
  return false;
}

/**
 * Whether some granted capability of `kind` has a pattern that `matches` `value`: the check of
 * every pattern kind, made once per tool a turn is offered, so without a list or closure of its own.
 */
export function somePattern(
  capabilities: readonly Capability[],
  kind: PatternCapabilityKind,
  matches: (pattern: string, value: string) => boolean,
  value: string,
): boolean {
  for (const capability of capabilities) {
    if (capability.kind === kind && 'pattern' in capability && matches(capability.pattern, value)) return true;
  }
  return false;
}
