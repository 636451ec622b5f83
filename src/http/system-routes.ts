import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Clock } from '../contracts/index.ts';
import type { Kernel, KernelEvent } from '../kernel/index.ts';
import type { HttpEnv } from './http-context.ts';
import { readQuery, withoutUndefined } from './request-input.ts';

/** How often `/api/events` writes a heartbeat comment, so proxies keep the connection open. */
export const EVENTS_HEARTBEAT_MS = 15_000;

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

/** `/api/health` (public), `/api/usage`, `/api/audit` and `/api/events` (SSE of the kernel's event bus). */
export function createSystemRoutes(options: SystemRoutesOptions): Hono<HttpEnv> {
  const { kernel, clock, version } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/health', (c) => c.json({ status: 'ok', version, agents: kernel.list().length }));

  routes.get('/usage', async (c) => c.json(await kernel.usage(withoutUndefined(readQuery(c, UsageQuerySchema)))));

  routes.get('/audit', async (c) => c.json(await kernel.audit(withoutUndefined(readQuery(c, AuditQuerySchema)))));

  routes.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      const stop = new AbortController();
      const queue: KernelEvent[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = kernel.events.subscribe((event) => {
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
    }),
  );

  return routes;
}
