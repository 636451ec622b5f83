import { useEffect, useState } from 'preact/hooks';

/** A client route, from the URL's hash (`#/agents/scout/chat`). */
export type Route =
  | { page: 'agents' }
  | { page: 'agent'; agent: string }
  | { page: 'chat'; agent: string }
  | { page: 'events' }
  | { page: 'usage' }
  | { page: 'approvals' }
  | { page: 'packages' }
  | { page: 'tools' }
  | { page: 'channels' }
  | { page: 'not-found'; path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const parts = path
    .split('/')
    .filter((part) => part !== '')
    .map((part) => decodeURIComponent(part));
  const [first, second, third] = parts;
  if (first === undefined || (first === 'agents' && second === undefined)) return { page: 'agents' };
  if (first === 'agents' && second !== undefined && third === undefined) return { page: 'agent', agent: second };
  if (first === 'agents' && second !== undefined && third === 'chat' && parts.length === 3) return { page: 'chat', agent: second };
  if (
    parts.length === 1 &&
    (first === 'events' || first === 'usage' || first === 'approvals' || first === 'packages' || first === 'tools' || first === 'channels')
  )
    return { page: first };
  return { page: 'not-found', path };
}

/** The document title of a route: the page, then the agent where there is one, then Loom. */
export function titleOf(route: Route): string {
  if (route.page === 'agent') return `${route.agent} · Agents · Loom`;
  if (route.page === 'chat') return `Chat with ${route.agent} · Loom`;
  const page = {
    agents: 'Agents',
    events: 'Events',
    usage: 'Usage',
    approvals: 'Approvals',
    packages: 'Packages',
    tools: 'Tools',
    channels: 'Channels',
    'not-found': 'Not found',
  }[route.page];
  return `${page} · Loom`;
}

/** Hrefs for the routes. */
export const href = {
  agents: '#/agents',
  agent: (name: string) => `#/agents/${encodeURIComponent(name)}`,
  chat: (name: string) => `#/agents/${encodeURIComponent(name)}/chat`,
  events: '#/events',
  usage: '#/usage',
  approvals: '#/approvals',
  packages: '#/packages',
  tools: '#/tools',
  channels: '#/channels',
};

export function navigate(to: string): void {
  window.location.hash = to;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
