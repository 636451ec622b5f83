import type { Capability, CapabilityOfKind } from './capability.ts';

/**
 * The two numeric kinds read in opposite directions. `llm_max_tokens` is a restriction: none
 * means unlimited, and several mean the smallest. `econ_spend` is an authority: none means
 * nothing may be spent, and several mean the largest.
 */

/** The token cap the capabilities impose: the smallest `llm_max_tokens`, or `Infinity` when there is none. */
export function tokenCap(capabilities: readonly Capability[]): number {
  let cap = Number.POSITIVE_INFINITY;
  for (const capability of capabilities) {
    if (capability.kind === 'llm_max_tokens') {
      cap = Math.min(cap, capability.max_tokens);
    }
  }
  return cap;
}

/** The largest `econ_spend` among the capabilities, or `undefined` when there is none (nothing may be spent). */
export function spendingAuthority(capabilities: readonly Capability[]): CapabilityOfKind<'econ_spend'> | undefined {
  let largest: CapabilityOfKind<'econ_spend'> | undefined;
  for (const capability of capabilities) {
    if (capability.kind === 'econ_spend' && (largest === undefined || capability.max_usd > largest.max_usd)) {
      largest = capability;
    }
  }
  return largest;
}

/** Whether `amount` is something that can be asked for: a number, not negative. */
export function isAmount(amount: number): boolean {
  return !Number.isNaN(amount) && amount >= 0;
}
