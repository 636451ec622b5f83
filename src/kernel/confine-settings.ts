import type { JsonValue } from '../contracts/index.ts';
import { fetchDomainCovers } from '../forged-tools/index.ts';
import { type Manifest, manifestDefaults } from '../manifest/index.ts';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../runtime/index.ts';
import { NUMERIC_TOOL_SETTING_DEFAULTS } from '../tools/index.ts';
import { limit, type Report, union } from './confinement-rules.ts';

/** The tables of a child's manifest that `confineChild` confines by their own rules: `[tools]`, `[autonomous]`, `[emergent]`. */

const DEFAULT_TOOL_TIMEOUT_SECONDS = DEFAULT_TOOL_TIMEOUT_MS / 1000;

/**
 * Tool settings may only narrow: a child's `timeout_seconds` is a limit (default 60 s), any
 * other numeric setting is at most the parent's when the parent sets it, and any other setting
 * (a provider, a base URL) must be the parent's own. The parent's settings are inherited.
 */
export function confineToolSettings(parent: Manifest, child: Manifest, report: Report): Manifest['tools'] {
  const merged: Manifest['tools'] = {};
  for (const [tool, settings] of Object.entries(parent.tools)) merged[tool] = { ...settings };
  for (const [tool, settings] of Object.entries(child.tools)) {
    const inherited = parent.tools[tool] ?? {};
    const result: Record<string, JsonValue | undefined> = { ...inherited };
    for (const [key, value] of Object.entries(settings)) {
      const field = `[tools.${tool}].${key}`;
      const theirs = inherited[key];
      if (key === 'timeout_seconds' && typeof value === 'number') {
        const parentTimeout = typeof theirs === 'number' ? theirs : DEFAULT_TOOL_TIMEOUT_SECONDS;
        result[key] = limit(field, value, parentTimeout, DEFAULT_TOOL_TIMEOUT_SECONDS, report);
      } else if (typeof value === 'number' && typeof theirs === 'number') {
        if (value > theirs) report(field, `${value} is more than the parent's ${theirs}`);
        result[key] = value;
      } else if (typeof value === 'number' && theirs === undefined) {
        // The parent runs at the tool's default: the child may go as far as that, no further.
        const fallback = NUMERIC_TOOL_SETTING_DEFAULTS[key];
        if (fallback === undefined) report(field, `${value} is set where the parent sets nothing, and no default bounds it; set it in the parent first`);
        else if (value > fallback) report(field, `${value} is more than the ${fallback} the parent runs with (it leaves the setting at its default)`);
        result[key] = value;
      } else if (JSON.stringify(value) !== JSON.stringify(theirs)) {
        report(
          field,
          `${JSON.stringify(value)} differs from the parent's ${theirs === undefined ? 'default' : JSON.stringify(theirs)}; a child may only narrow tool settings`,
        );
      } else {
        result[key] = value;
      }
    }
    merged[tool] = result as Manifest['tools'][string];
  }
  return merged;
}

/** `[autonomous]`: the parent's approvals always bind the child; its numbers are limits. */
export function confineAutonomous(parent: Manifest, child: Manifest, report: Report): Manifest['autonomous'] {
  const theirs = parent.autonomous;
  const ours = child.autonomous;
  if (theirs === undefined) return ours;
  if (ours === undefined) return { ...theirs, approval_required_for: [...theirs.approval_required_for] };
  const defaults = manifestDefaults().autonomous as NonNullable<Manifest['autonomous']>;
  return {
    approval_required_for: union(theirs.approval_required_for, ours.approval_required_for),
    max_actions_per_cycle: limit(
      '[autonomous].max_actions_per_cycle',
      ours.max_actions_per_cycle,
      theirs.max_actions_per_cycle,
      defaults.max_actions_per_cycle,
      report,
    ),
    idle_timeout_seconds: limit(
      '[autonomous].idle_timeout_seconds',
      ours.idle_timeout_seconds,
      theirs.idle_timeout_seconds,
      defaults.idle_timeout_seconds,
      report,
    ),
  };
}

/**
 * `[emergent]` of a child: forging only where the parent forges; tool counts, sandbox time and
 * memory at most the parent's; sandbox APIs and fetch domains among the parent's; a promotion
 * threshold at least as strict. (The judge models are checked with the other models.)
 */
export function confineEmergent(parent: Manifest, child: Manifest, report: Report): Manifest['emergent'] {
  const own = child.emergent;
  if (own === undefined || !own.enabled) return own;
  const theirs = parent.emergent;
  const d = manifestDefaults().emergent;
  if (theirs === undefined || !theirs.enabled || d === undefined) {
    report('[emergent]', 'lets it forge tools, which the parent may not do');
    return own;
  }
  const at = (key: string): string => `[emergent].${key}`;
  const apis = own.allowed_sandbox_apis.filter((api) => !theirs.allowed_sandbox_apis.includes(api));
  if (apis.length > 0) report(at('allowed_sandbox_apis'), `gives the sandbox ${apis.map((api) => `"${api}"`).join(', ')}, which the parent's does not`);
  const domains = own.fetch_domain_allowlist.filter((domain) => !theirs.fetch_domain_allowlist.some((pattern) => fetchDomainCovers(pattern, domain)));
  if (domains.length > 0) report(at('fetch_domain_allowlist'), `names ${domains.map((domain) => `"${domain}"`).join(', ')}, which the parent's does not cover`);
  // A lower promotion threshold keeps tools more easily: it may only be stricter.
  const stricter = (key: 'uses' | 'confidence'): number => {
    const value = own.promotion_threshold[key];
    const floor = theirs.promotion_threshold[key];
    if (value >= floor) return value;
    if (value === d.promotion_threshold[key]) return floor;
    report(at(`promotion_threshold.${key}`), `${value} is below the parent's ${floor}`);
    return value;
  };
  return {
    ...own,
    max_session_tools: limit(at('max_session_tools'), own.max_session_tools, theirs.max_session_tools, d.max_session_tools, report),
    max_agent_tools: limit(at('max_agent_tools'), own.max_agent_tools, theirs.max_agent_tools, d.max_agent_tools, report),
    sandbox_timeout_ms: limit(at('sandbox_timeout_ms'), own.sandbox_timeout_ms, theirs.sandbox_timeout_ms, d.sandbox_timeout_ms, report),
    sandbox_memory_mb: limit(at('sandbox_memory_mb'), own.sandbox_memory_mb, theirs.sandbox_memory_mb, d.sandbox_memory_mb, report),
    max_forge_attempts_per_hour: limit(
      at('max_forge_attempts_per_hour'),
      own.max_forge_attempts_per_hour,
      theirs.max_forge_attempts_per_hour,
      d.max_forge_attempts_per_hour,
      report,
    ),
    max_nested_calls: limit(at('max_nested_calls'), own.max_nested_calls, theirs.max_nested_calls, d.max_nested_calls, report),
    promotion_threshold: { uses: stricter('uses'), confidence: stricter('confidence') },
  };
}
