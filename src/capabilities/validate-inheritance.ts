import type { JsonObject } from '../contracts/index.ts';
import { CapabilityEscalationError } from '../errors/index.ts';
import type { Capability } from './capability.ts';
import { holds, isGranted, somePattern } from './check.ts';
import { filePatternCovers } from './file-path.ts';
import { describeCapability, describeManifestKey, describeManifestValue } from './manifest-words.ts';
import { spendingAuthority, tokenCap } from './limits.ts';
import { netPatternCovers } from './net-address.ts';
import { patternCovers } from './pattern.ts';
import { shellPatternCovers } from './shell-pattern.ts';

/**
 * The capabilities of `child` that `parent` does not cover, in the child's order, each once.
 * Empty when the child stays within its parent.
 *
 * A child pattern is covered when one parent pattern of the same kind covers it on its own
 * (see `patternCovers`; file patterns are normalised first, network patterns respect ports,
 * shell patterns compare word by word, see `shellPatternCovers`).
 * `tool_all` and `tools = ["*"]` cover each other and every tool. Boolean kinds, `net_listen`
 * and `econ_spend` need the parent to hold as much. `llm_max_tokens` caps compare as the
 * smallest on each side; a child with no cap under a capped parent is reported as
 * `{ kind: 'llm_max_tokens', max_tokens: Infinity }`, its missing cap, since it would be
 * unlimited. Sound but not complete: something this reports may in contrived cases be covered
 * (see `patternCovers`); something it does not report is always covered. Throws nothing.
 */
export function findEscalations(parent: readonly Capability[], child: readonly Capability[]): Capability[] {
  const parentTokenCap = tokenCap(parent);
  const childTokenCap = tokenCap(child);
  const uncovered = new Map<string, Capability>();
  const report = (capability: Capability): void => {
    uncovered.set(JSON.stringify(toJson(capability)), capability);
  };
  for (const capability of child) {
    // A cap only restricts, so what matters is the child's tightest one, not each on its own.
    const isCovered = capability.kind === 'llm_max_tokens' ? childTokenCap <= parentTokenCap : covers(parent, capability);
    if (!isCovered) {
      report(capability);
    }
  }
  if (childTokenCap > parentTokenCap && !holds(child, 'llm_max_tokens')) {
    report({ kind: 'llm_max_tokens', max_tokens: Number.POSITIVE_INFINITY });
  }
  return [...uncovered.values()];
}

/**
 * Refuses a child that would hold more than its parent (spec/01, "Capability Inheritance
 * Validation"), naming every uncovered child capability in the manifest's words.
 *
 * @throws {CapabilityEscalationError} when `findEscalations` finds any, e.g. `cannot give a
 * child agent capabilities its parent lacks: [capabilities].shell "*" is not covered by the
 * parent (the parent grants no [capabilities].shell)`. Several are joined with "; ". `details`
 * is `{ uncovered: [...] }`, the capabilities as JSON (an unlimited token cap as `max_tokens:
 * null`).
 */
export function validateInheritance(parent: readonly Capability[], child: readonly Capability[]): void {
  const uncovered = findEscalations(parent, child);
  if (uncovered.length === 0) {
    return;
  }
  const reasons = uncovered.map((capability) => explain(parent, capability));
  throw new CapabilityEscalationError(
    `cannot give a child agent capabilities its parent lacks: ${reasons.join('; ')}. ` +
      "Remove them from the child's [capabilities] or grant them to the parent first.",
    { details: { uncovered: uncovered.map(toJson) } },
  );
}

function covers(parent: readonly Capability[], capability: Capability): boolean {
  switch (capability.kind) {
    case 'file_read':
    case 'file_write':
      return somePattern(parent, capability.kind, filePatternCovers, capability.pattern);
    case 'net_connect':
      return somePattern(parent, capability.kind, netPatternCovers, capability.pattern);
    case 'tool_invoke':
      return holds(parent, 'tool_all') || somePattern(parent, 'tool_invoke', patternCovers, capability.pattern);
    case 'llm_max_tokens':
      return capability.max_tokens <= tokenCap(parent);
    case 'tool_all':
    case 'net_listen':
    case 'econ_spend':
    case 'agent_spawn':
    case 'ofp_discover':
    case 'ofp_advertise':
    case 'econ_earn':
      // For these, holding the capability and covering it are the same question.
      return isGranted(parent, capability);
    case 'shell_exec':
      return somePattern(parent, capability.kind, shellPatternCovers, capability.pattern);
    case 'llm_query':
    case 'agent_message':
    case 'agent_kill':
    case 'memory_read':
    case 'memory_write':
    case 'env_read':
    case 'ofp_connect':
    case 'econ_transfer':
      return somePattern(parent, capability.kind, patternCovers, capability.pattern);
  }
}

/** The parent's capabilities a reader should compare an uncovered one with. */
function comparable(parent: readonly Capability[], capability: Capability): Capability[] {
  if (capability.kind === 'llm_max_tokens') {
    const cap = tokenCap(parent);
    return Number.isFinite(cap) ? [{ kind: 'llm_max_tokens', max_tokens: cap }] : [];
  }
  if (capability.kind === 'econ_spend') {
    const authority = spendingAuthority(parent);
    return authority === undefined ? [] : [authority];
  }
  // A parent holding tool_all would have covered it, so only its named tools are worth showing.
  const kind = capability.kind === 'tool_all' ? 'tool_invoke' : capability.kind;
  return parent.filter((held) => held.kind === kind);
}

function explain(parent: readonly Capability[], capability: Capability): string {
  const described = describeCapability(capability);
  const held = comparable(parent, capability);
  const first = held[0];
  if (first === undefined) {
    return `${described} is not covered by the parent (the parent grants no ${describeManifestKey(capability.kind)})`;
  }
  const values = held.map(describeManifestValue).join(', ');
  return `${described} is not covered by the parent's ${describeManifestKey(first.kind)} ${values}`;
}

function toJson(capability: Capability): JsonObject {
  if (capability.kind === 'llm_max_tokens' && !Number.isFinite(capability.max_tokens)) {
    return { kind: capability.kind, max_tokens: null };
  }
  return { ...capability };
}
