// Kept apart from the routes (and the SDK they load), so the API's auth can ask without loading them.

/**
 * Whether a `method` request for `path` is one of the public A2A reads (agent cards) for
 * `listenPath`: asked without a key (with keys, the card routes show a caller only the cards of
 * the agents it may see, and `[a2a].public_agents` to a caller with no key). Only GET and HEAD are: a card's path can also name an agent's JSON-RPC endpoint
 * (an agent named `agents` answers POSTs at `<listen_path>/agents`), which must never be public.
 */
export function isPublicA2aPath(method: string, path: string, listenPath = '/a2a'): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  // Every A2A route answers with a trailing slash as well.
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (path === '/.well-known/agent-card.json' || path === '/.well-known/agent.json') return true;
  const base = listenPath === '/' ? '' : listenPath;
  return path === `${base}/agents` || (path.startsWith(`${base}/`) && path.endsWith('/.well-known/agent-card.json'));
}
