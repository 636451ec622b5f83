import { z } from 'zod';
import type { Capability } from '../contracts/index.ts';
import { patternProblem } from './pattern-problem.ts';

/**
 * Every capability kind of spec/01 ("Capability Types"), snake_case. Kept in the order of the
 * spec so listings and docs read the same way.
 */
export const CAPABILITY_KINDS = [
  'file_read',
  'file_write',
  'net_connect',
  'net_listen',
  'tool_invoke',
  'tool_all',
  'llm_query',
  'llm_max_tokens',
  'agent_spawn',
  'agent_message',
  'agent_kill',
  'memory_read',
  'memory_write',
  'shell_exec',
  'env_read',
  'ofp_discover',
  'ofp_connect',
  'ofp_advertise',
  'econ_spend',
  'econ_earn',
  'econ_transfer',
] as const satisfies readonly CapabilityKind[];

/** A `pattern` held to what `patternProblem` accepts for `kind`. */
function patternSchema(kind: PatternCapabilityKind): z.ZodString {
  return z.string().superRefine((pattern, context) => {
    const problem = patternProblem(kind, pattern);
    if (problem !== undefined) {
      context.addIssue({ code: 'custom', message: problem, input: pattern });
    }
  });
}

function withPattern<Kind extends PatternCapabilityKind>(kind: Kind) {
  return z.strictObject({ kind: z.literal(kind), pattern: patternSchema(kind) });
}

function withoutPayload<Kind extends string>(kind: Kind) {
  return z.strictObject({ kind: z.literal(kind) });
}

/**
 * A capability read from outside (an HTTP body, a stored row, a peer): a strict discriminated
 * union on `kind`, so an unknown kind or an unknown key is an error naming it, and a pattern is
 * checked as the manifest checks it (`patternProblem`): `pattern: "[::1"` is an error at
 * `pattern`.
 *
 * @example
 * ```ts
 * const result = CapabilitySchema.safeParse({ kind: 'net_connect', pattern: 'api.openai.com:443' });
 * ```
 */
export const CapabilitySchema = z.discriminatedUnion('kind', [
  withPattern('file_read'),
  withPattern('file_write'),
  withPattern('net_connect'),
  z.strictObject({ kind: z.literal('net_listen'), port: z.int().min(1).max(65_535) }),
  withPattern('tool_invoke'),
  withoutPayload('tool_all'),
  withPattern('llm_query'),
  z.strictObject({ kind: z.literal('llm_max_tokens'), max_tokens: z.int().positive() }),
  withoutPayload('agent_spawn'),
  withPattern('agent_message'),
  withPattern('agent_kill'),
  withPattern('memory_read'),
  withPattern('memory_write'),
  withPattern('shell_exec'),
  withPattern('env_read'),
  withoutPayload('ofp_discover'),
  withPattern('ofp_connect'),
  withoutPayload('ofp_advertise'),
  z.strictObject({ kind: z.literal('econ_spend'), max_usd: z.number().nonnegative() }),
  withoutPayload('econ_earn'),
  withPattern('econ_transfer'),
]);

/** One thing an agent may do; the type lives with the contracts, the schema here matches it. */
export type { Capability };

// Fails to compile when the schema and the contract's union drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesContract: Same<z.output<typeof CapabilitySchema>, Capability> = true;
void schemaMatchesContract;

/** The `kind` of a capability. */
export type CapabilityKind = Capability['kind'];

/** The capability variant of one kind, e.g. `CapabilityOfKind<'net_listen'>`. */
export type CapabilityOfKind<Kind extends CapabilityKind> = Extract<Capability, { kind: Kind }>;

/** The kinds whose payload is a glob `pattern`. */
export type PatternCapabilityKind = Extract<Capability, { pattern: string }>['kind'];
