/**
 * `A2aAccess`: who asks an A2A request, and what they see. A request reaching an agent or a task
 * needs a caller (deny by default); a card is shown, with keys, only to a caller whose key
 * reaches its agent or to anyone when `[a2a].public_agents` names it; an agent a caller may not
 * see is as unknown as a missing one.
 */
import type { Context } from 'hono';
import { matchesPattern } from '../capabilities/index.ts';
import { LOCAL_PRINCIPAL_NAME } from '../config/index.ts';
import { LoomError, UnauthorizedError } from '../errors/index.ts';
import { type AgentDetailView, type Caller, OWNER, principalOfCaller, reachesAgent } from '../kernel/index.ts';
import type { A2aServerOptions } from './a2a-server-options.ts';

/** The origin (scheme, host, port) request `c` was sent to. */
export const originOf = (c: Context): string => new URL(c.req.url).origin;

/** The error of a request naming an agent that does not exist, or that its caller may not see. */
export const unknownAgent = (name: string): LoomError => new LoomError('AGENT_NOT_FOUND', 'user', `no agent named "${name}"`);

/** Who asks the A2A server, and which agents they see. */
export class A2aAccess {
  readonly #options: A2aServerOptions;
  readonly #publicAgents: readonly string[];

  constructor(options: A2aServerOptions) {
    this.#options = options;
    this.#publicAgents = options.config.a2a.public_agents;
  }

  /** The live agent `name` names (a name or an id), whoever asks. */
  findAgent(name: string): AgentDetailView | undefined {
    try {
      return this.#options.kernel.get(name);
    } catch {
      return undefined;
    }
  }

  /** `[a2a].default_agent` when it lives, else the first agent (undefined when none runs). */
  defaultAgent(): AgentDetailView | undefined {
    const configured = this.#options.config.a2a.default_agent;
    if (configured !== undefined) {
      const agent = this.findAgent(configured);
      if (agent !== undefined) return agent;
    }
    const first = this.#options.kernel.list()[0];
    return first === undefined ? undefined : this.findAgent(first.id);
  }

  /** Who reads a card: see `callerOf` (undefined: nobody authenticated, as on the public card paths). */
  readerOf(c: Context): Caller | undefined {
    return this.#options.callerOf === undefined ? OWNER : this.#options.callerOf(c);
  }

  /** Whether the API asks for keys, as `caller` (who asks) shows it: see `keyed`. */
  keyedFor(caller: Caller | undefined): boolean {
    if (this.#options.callerOf === undefined) return false;
    if (this.#options.keyed !== undefined) return this.#options.keyed;
    return !(caller?.kind === 'user' && caller.name === LOCAL_PRINCIPAL_NAME);
  }

  /**
   * Whether `caller` may see the card of the agent named `name`: with keys, when
   * `[a2a].public_agents` names it or the caller's key reaches it (owners and viewers reach every
   * agent, a user key those its patterns match); without keys, always.
   */
  sees(caller: Caller | undefined, name: string): boolean {
    if (!this.keyedFor(caller) || this.#publicAgents.some((pattern) => matchesPattern(pattern, name))) return true;
    if (caller === undefined) return false;
    return caller.kind !== 'user' || reachesAgent(principalOfCaller(caller), name);
  }

  /** The live agent `name` names, when request `c`'s caller may see it: one it may not is as unknown as a missing one. */
  visibleAgent(c: Context, name: string): AgentDetailView | undefined {
    const agent = this.findAgent(name);
    return agent !== undefined && this.sees(this.readerOf(c), agent.name) ? agent : undefined;
  }

  /** Who asks: see `callerOf`. @throws {UnauthorizedError} when a request reaching agents or tasks has nobody behind it. */
  callerFor(c: Context): Caller {
    if (this.#options.callerOf === undefined) return { kind: 'user', role: 'owner' };
    const caller = this.#options.callerOf(c);
    if (caller === undefined)
      throw new UnauthorizedError(
        'this A2A request needs an API key: send "Authorization: Bearer <key>" or "X-API-Key: <key>" (only the agent cards are public)',
      );
    return caller;
  }
}
