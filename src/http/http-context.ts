import { AccessDeniedError } from '../errors/index.ts';
import type { Context } from 'hono';
import type { Principal } from '../access/index.ts';
import type { RequestDeadline } from './request-deadline.ts';

/** The Hono environment of the API: what the middleware hands to the routes. */
export interface HttpEnv {
  Variables: {
    /** Undefined only for an anonymous request to a public route (health). */
    principal: Principal | undefined;
    /** Aborts when the client goes away or the request times out. */
    deadline: RequestDeadline;
    /**
     * Charges this request's client `units` more (a call found to run a turn once its body is
     * read); throws `RATE_LIMITED` when it is out. Charges nothing for an unlimited client.
     */
    charge: (units: number) => void;
  };
}

/** The context the API's handlers get. */
export type HttpContext = Context<HttpEnv>;

/** The authenticated principal of a non-public route (the auth middleware guarantees one). */
export function principalOf(c: HttpContext): Principal {
  const principal = c.get('principal');
  if (principal === undefined) throw new Error(`route ${c.req.path} was reached without a principal`);
  return principal;
}

/**
 * Refuses a user key (one limited to some agents) a view of the whole installation (its MCP
 * servers, the external agents it knows), naming the action. @throws {AccessDeniedError}
 */
export function requireWholeView(principal: Principal, action: string): void {
  if (principal.role === 'user') throw new AccessDeniedError(`a user key ("${principal.name}") may not ${action}: that shows the whole installation, not its agents; it needs the viewer or owner role`);
}

/** Refuses a key without the owner role, naming the action. @throws {AccessDeniedError} */
export function requireOwner(principal: Principal, action: string): void {
  if (principal.role !== 'owner') throw new AccessDeniedError(`a ${principal.role} key ("${principal.name}") may not ${action}; it needs the owner role`);
}
