import type { Clock, ClusterView } from '../contracts/index.ts';
import type { ClusterNode } from './cluster-node.ts';

/** What {@link createSingleNode} needs. */
export interface SingleNodeOptions {
  id: string;
  name: string;
  version: string;
  clock: Clock;
}

/**
 * A process alone: a daemon on SQLite, or a CLI command that boots its own kernel (which fires
 * nothing). Always the leader, from start to stop; every instant of its timed work is its own.
 */
export function createSingleNode(options: SingleNodeOptions): ClusterNode {
  const { id, name, version, clock } = options;
  const startedAt = clock.now();
  let url: string | null = null;
  return {
    id,
    name,
    store: 'sqlite',
    isLeader: () => true,
    subscribe: () => () => undefined,
    claim: () => Promise.resolve(true),
    othersAlive: () => Promise.resolve(false),
    liveNode: (other) => Promise.resolve(other === id ? { name, url } : undefined),
    start: () => Promise.resolve(),
    setUrl(value) {
      url = value;
    },
    stop: () => Promise.resolve(),
    view(): Promise<ClusterView> {
      const now = new Date(clock.now()).toISOString();
      return Promise.resolve({
        store: 'sqlite',
        self: id,
        leader: id,
        nodes: [{ id, name, url, version, started_at: new Date(startedAt).toISOString(), last_seen: now, leader: true, self: true, alive: true }],
        jobs: null,
      });
    },
  };
}
