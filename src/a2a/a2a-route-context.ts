/**
 * What the A2A server's routes share (`A2aRouteContext`: one record in place of a closure's
 * state), and the path helper every route uses.
 */
import type { AgentCard } from '@a2a-js/sdk';
import type { Logger } from '../contracts/index.ts';
import type { AgentDetailView } from '../kernel/index.ts';
import type { A2aAccess } from './a2a-access.ts';
import type { A2aRequests } from './a2a-requests.ts';
import type { A2aServerOptions } from './a2a-server-options.ts';
import type { AgentHandlers } from './agent-handlers.ts';
import type { BoundedTaskStore } from './bounded-task-store.ts';

/** The parts of the A2A server its routes use. */
export interface A2aRouteContext {
  readonly options: A2aServerOptions;
  /** The server's logger (`component: a2a`). */
  readonly logger: Logger;
  /** The listen path, '' at the root: every route's path starts with it. */
  readonly base: string;
  readonly now: () => number;
  readonly store: BoundedTaskStore;
  readonly access: A2aAccess;
  readonly requests: A2aRequests;
  readonly agents: AgentHandlers;
  /** The card of `agent` (the placeholder card without one) as served at `origin`. */
  readonly cardOf: (agent: AgentDetailView | undefined, origin: string, keyed: boolean) => AgentCard;
}

/** A route's path and the same path with a trailing slash (clients that normalise URLs add one). */
export const slashed = (path: string): string[] => [path, `${path}/`];
