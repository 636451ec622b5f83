import type { AgentState } from '../contracts/index.ts';
import type { Capability } from '../capabilities/index.ts';
import type { Manifest } from '../manifest/index.ts';

/** An agent by its id and name (neither ever changes). */
export interface AgentRef {
  readonly id: string;
  readonly name: string;
}

/** A live agent as the kernel holds it. */
export interface AgentEntry {
  readonly id: string;
  readonly name: string;
  state: AgentState;
  readonly parentId: string | null;
  /**
   * The agents above it, its parent first, fixed when it is spawned (an agent is never given
   * another parent) from the stored parent links: whose lifetime caps its model calls draw from,
   * and the `lineage` of its usage records (see `lineageOf`), whether or not they are held here.
   */
  readonly ancestors: readonly AgentRef[];
  /** Ids of live children, in spawn order. */
  readonly children: Set<string>;
  readonly sessionId: string;
  /** Replaced as a whole by `kernel.update` (a turn under way keeps the one it started with). */
  manifest: Manifest;
  capabilities: readonly Capability[];
  readonly createdAt: number;
  updatedAt: number;
}
