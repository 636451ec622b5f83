// Loaded before `serve` swaps the global Response for its own: RESPONSE_ALREADY_SENT (the answer of
// a route that wrote on Node's response itself, the A2A 0.3 REST router's) must be a native
// Response, or the server writes it out as an empty 200 over the router's reply.
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';

export { RESPONSE_ALREADY_SENT };

/**
 * The header that marks an answer a route wrote on Node's response itself: `RESPONSE_ALREADY_SENT`'s
 * own (its only one), read from it, so that a copy of that answer (Hono's for a HEAD) is known by it.
 */
export const ALREADY_SENT_HEADER: string = (() => {
  const [name] = RESPONSE_ALREADY_SENT.headers.keys();
  if (name === undefined) throw new Error("@hono/node-server's RESPONSE_ALREADY_SENT carries no header: the answers written on Node's response cannot be told");
  return name;
})();
