import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Clock } from '../contracts/index.ts';
import type { Kernel, KernelEvent } from '../kernel/index.ts';
import type { HttpEnv } from './http-context.ts';
import { readQuery, withoutUndefined } from './request-input.ts';
import { readableAgentIds, reachAgent } from './caller-scope.ts';
import { principalOf } from './http-context.ts';
import { mayReachAgent } from '../access/index.ts';

/** How often `/api/events` writes a heartbeat comment, so proxies keep the connection open. */
export const EVENTS_HEARTBEAT_MS = 15_000;

/** Rows `/api/audit` answers when the query gives no `limit` (the kernel's default). */
const DEFAULT_AUDIT_LIMIT = 500;

const UsageQuerySchema = z.strictObject({
  agent: z.string().min(1).optional(),
  /** Epoch milliseconds. */
  since: z.coerce.number().int().min(0).optional(),
});

const AuditQuerySchema = z.strictObject({
  agent: z.string().min(1).optional(),
  after: z.coerce.number().int().min(0).optional(),
  type: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** What the system routes need. */
export interface SystemRoutesOptions {
  kernel: Kernel;
  clock: Clock;
  version: string;
}

/**
 * `/api/health` (public), `/api/usage`, `/api/audit` and `/api/events` (SSE of the kernel's event
 * bus). A `user` key reads only the rows and events of the agents its patterns reach.
 */
export function createSystemRoutes(options: SystemRoutesOptions): Hono<HttpEnv> {
  const { kernel, clock, version } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/health', (c) => c.json({ status: 'ok', version, agents: kernel.list().length }));

  // A user key reads only the rows of the agents it reaches (checked like a message to one).
  routes.get('/usage', async (c) => {
    const principal = principalOf(c);
    const query = withoutUndefined(readQuery(c, UsageQuerySchema));
    if (query.agent !== undefined && principal.role === 'user') reachAgent(kernel, principal, query.agent);
    const rows = await kernel.usage(query);
    const readable = readableAgentIds(kernel, principal);
    return c.json(readable === undefined ? rows : rows.filter((row) => readable.has(row.agent_id)));
  });

  routes.get('/audit', async (c) => {
    const principal = principalOf(c);
    const query = withoutUndefined(readQuery(c, AuditQuerySchema));
    const readable = readableAgentIds(kernel, principal);
    if (readable === undefined) return c.json(await kernel.audit(query));
    if (query.agent !== undefined) return c.json(await kernel.audit({ ...query, agent: reachAgent(kernel, principal, query.agent).id }));
    // One page per readable agent, merged in log order: the limit counts rows the key may see.
    const limit = query.limit ?? DEFAULT_AUDIT_LIMIT;
    const pages = await Promise.all([...readable].map((agent) => kernel.audit({ ...query, agent, limit })));
    return c.json(pages.flat().sort((first, second) => first.seq - second.seq).slice(0, limit));
  });

  routes.get('/events', (c) => {
    const principal = principalOf(c);
    return streamSSE(c, async (stream) => {
      const stop = new AbortController();
      const queue: KernelEvent[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = kernel.events.subscribe((event) => {
        // Every kernel event names its agent; a user key sees those of the agents it reaches.
        if (!mayReachAgent(principal, event.name)) return;
        queue.push(event);
        wake?.();
      });
      const onAbort = (): void => {
        stop.abort();
        wake?.();
      };
      stream.onAbort(onAbort);
      c.req.raw.signal.addEventListener('abort', onAbort, { once: true });
      const heartbeat = (async () => {
        while (!stop.signal.aborted) {
          try {
            await clock.sleep(EVENTS_HEARTBEAT_MS, { signal: stop.signal });
          } catch {
            return;
          }
          await stream.write(': heartbeat\n\n');
        }
      })();
      try {
        await stream.write(': connected\n\n');
        while (!stop.signal.aborted) {
          for (let event = queue.shift(); event !== undefined; event = queue.shift()) {
            await stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
          }
          if (stop.signal.aborted) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        unsubscribe();
        stop.abort();
        c.req.raw.signal.removeEventListener('abort', onAbort);
        await heartbeat;
      }
    });
  });

  return routes;
}
