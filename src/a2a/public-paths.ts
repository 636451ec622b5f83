// Kept apart from the routes (and the SDK they load), so the API's auth can ask without loading them.

/** Whether `path` is one of the public A2A paths (agent cards) for `listenPath`. */
export function isPublicA2aPath(path: string, listenPath = '/a2a'): boolean {
  // Every A2A route answers with a trailing slash as well.
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (path === '/.well-known/agent-card.json' || path === '/.well-known/agent.json') return true;
  const base = listenPath === '/' ? '' : listenPath;
  return path === `${base}/agents` || (path.startsWith(`${base}/`) && path.endsWith('/.well-known/agent-card.json'));
}
