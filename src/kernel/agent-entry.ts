import type { AgentState } from '../contracts/index.ts';
import type { Capability } from '../capabilities/index.ts';
import type { Manifest } from '../manifest/index.ts';

/** A live agent as the kernel holds it. */
export interface AgentEntry {
  readonly id: string;
  readonly name: string;
  state: AgentState;
  readonly parentId: string | null;
  /** Ids of live children, in spawn order. */
  readonly children: Set<string>;
  readonly sessionId: string;
  /** Replaced as a whole by `kernel.update` (a turn under way keeps the one it started with). */
  manifest: Manifest;
  capabilities: readonly Capability[];
  readonly createdAt: number;
  updatedAt: number;
}
