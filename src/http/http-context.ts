import type { Context } from 'hono';
import type { Principal } from '../access/index.ts';
import { type CallerKernel, type Kernel, kernelAs } from '../kernel/index.ts';
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

/** The kernel as the request's principal sees it: every check of role and reach is made there. */
export function kernelOf(c: HttpContext, kernel: Kernel): CallerKernel {
  return kernelAs(kernel, principalOf(c));
}
