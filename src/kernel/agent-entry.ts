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
  readonly manifest: Manifest;
  readonly capabilities: readonly Capability[];
  readonly createdAt: number;
  updatedAt: number;
}
