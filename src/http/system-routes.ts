import { Hono } from 'hono';
import { z } from 'zod';
import { streamSSE } from 'hono/streaming';
import type { Clock, ClusterReader } from '../contracts/index.ts';
import { AUDIT_KINDS, AUDIT_OUTCOMES, type AuditKind, auditTypes, dayOf, type Kernel, type KernelEvent } from '../kernel/index.ts';
import type { HttpEnv } from './http-context.ts';
import { sseHead } from './sse-reply.ts';
import { readQuery, withoutUndefined } from './request-input.ts';
import { kernelOf } from './http-context.ts';
import { usageToday } from './usage-today.ts';
import { HttpRequestError } from '../errors/index.ts';
import {
  type AuditRecord,
  eventTypeProblem,
  type UsageRangeName,
  UsageQuerySchema,
  type UsageRow,
  UsageSeriesQuerySchema,
  type UsageSeriesView,
  type UsageToday,
  UsageTodayQuerySchema,
} from '../wire/index.ts';

/** How often `/api/events` writes a heartbeat comment, so proxies keep the connection open. */
export const EVENTS_HEARTBEAT_MS = 15_000;

const AuditQuerySchema = z.strictObject({
  agent: z.string().min(1).optional(),
  after: z.coerce.number().int().min(0).optional(),
  /** A newest-first page's cursor: rows with a smaller `seq`. */
  before: z.coerce.number().int().min(1).optional(),
  /** One type, or several separated by commas; each a stored event type (an old name is answered with its new one). */
  type: z
    .string()
    .min(1)
    .transform((value, context) => {
      const types = value
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      for (const type of types) {
        const problem = eventTypeProblem(type);
        if (problem !== undefined) context.addIssue({ code: 'custom', message: problem, input: value });
      }
      return types;
    })
    .optional(),
  kind: z.enum(Object.keys(AUDIT_KINDS) as [AuditKind, ...AuditKind[]]).optional(),
  outcome: z.enum(Object.keys(AUDIT_OUTCOMES) as [keyof typeof AUDIT_OUTCOMES, ...(keyof typeof AUDIT_OUTCOMES)[]]).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** The ranges `/api/usage/series?range=` knows, each with the width of its buckets. */
const USAGE_RANGES = {
  '1h': { rangeMs: 3_600_000, stepMs: 300_000 },
  '24h': { rangeMs: 86_400_000, stepMs: 3_600_000 },
  '7d': { rangeMs: 604_800_000, stepMs: 21_600_000 },
  '30d': { rangeMs: 2_592_000_000, stepMs: 86_400_000 },
} as const satisfies Record<UsageRangeName, { rangeMs: number; stepMs: number }>;

/** The most buckets one series answers, so a tiny step over a long range cannot ask for millions. */
const MAX_USAGE_BUCKETS = 2_000;

/** What the system routes need. */
export interface SystemRoutesOptions {
  kernel: Kernel;
  clock: Clock;
  version: string;
  /** The IANA time zone the daemon's day is counted in (`[scheduler].timezone`), for `/api/usage/today`; UTC when unset. */
  timezone?: string | undefined;
  /** The nodes sharing the store, for `/api/cluster`; without them that route answers 404. */
  cluster?: ClusterReader;
}

/**
 * `/api/health` (public), `/api/usage` (totals by agent and model), `/api/usage/today` (an agent's
 * or every agent's spend since the daemon's midnight), `/api/usage/series` (the same
 * per time bucket), `/api/audit` (oldest or newest first, filtered by agent, type, kind and
 * outcome), `/api/events` (SSE of the kernel's event bus) and `/api/cluster` (the daemons sharing
 * the store and their leader; not for a `user` key). A `user` key reads only the rows and events
 * of the agents its patterns reach.
 */
export function createSystemRoutes(options: SystemRoutesOptions): Hono<HttpEnv> {
  const { kernel, clock, version } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/health', (c) => c.json({ status: 'ok', version, agents: kernel.list().length }));

  // The installation's machinery, not any agent's: owners and viewers, as the audit of every agent.
  const cluster = options.cluster;
  if (cluster !== undefined) {
    routes.get('/cluster', async (c) => {
      kernelOf(c, kernel).require("read the cluster's nodes");
      return c.json(await cluster.view());
    });
  }

  // A user key reads only the rows of the agents it reaches (checked like a message to one).
  routes.get('/usage', async (c) => c.json((await kernelOf(c, kernel).usage(withoutUndefined(readQuery(c, UsageQuerySchema)))) satisfies UsageRow[]));

  // Today as the daily budgets count it (decision 0049): midnight to midnight in the scheduler's time zone, not the browser's.
  routes.get('/usage/today', async (c) => {
    const { agent } = readQuery(c, UsageTodayQuerySchema);
    const timezone = options.timezone ?? 'UTC';
    const day = dayOf(clock.now(), timezone);
    return c.json(
      usageToday(await kernelOf(c, kernel).usage({ since: day.start, ...(agent === undefined ? {} : { agent }) }), day, timezone) satisfies UsageToday,
    );
  });

  routes.get('/usage/series', async (c) => {
    const caller = kernelOf(c, kernel);
    const { agent, range, since: givenSince, until: givenUntil, step } = readQuery(c, UsageSeriesQuerySchema);
    const preset = USAGE_RANGES[range ?? '24h'];
    const stepMs = step ?? preset.stepMs;
    // Buckets end on a whole step of the kernel's clock, so the axis ticks fall on round times.
    const until = givenUntil ?? Math.ceil((clock.now() + 1) / stepMs) * stepMs;
    const since = givenSince ?? until - preset.rangeMs;
    if ((until - since) / stepMs > MAX_USAGE_BUCKETS) {
      throw new HttpRequestError(
        'INVALID_REQUEST',
        `cannot add usage up over time: ${Math.ceil((until - since) / stepMs)} buckets asked for, at most ${MAX_USAGE_BUCKETS}; give a larger step`,
      );
    }
    const buckets = await caller.usageSeries({ since, until, stepMs, ...(agent === undefined ? {} : { agent }) });
    return c.json({
      since,
      until,
      step_ms: stepMs,
      buckets: buckets.map((bucket) => ({
        start: bucket.start,
        agent_id: bucket.agentId,
        agent: bucket.agentName,
        model: bucket.model,
        calls: bucket.calls,
        input_tokens: bucket.inputTokens,
        output_tokens: bucket.outputTokens,
        cache_read_tokens: bucket.cacheReadTokens ?? 0,
        cache_write_tokens: bucket.cacheWriteTokens ?? 0,
        cost_usd: bucket.costUsd,
      })),
    } satisfies UsageSeriesView);
  });

  routes.get('/audit', async (c) => {
    const { type, kind, outcome, ...rest } = withoutUndefined(readQuery(c, AuditQuerySchema));
    const types = auditTypes({ types: type, kind, outcome });
    return c.json((await kernelOf(c, kernel).audit({ ...rest, ...(types === undefined ? {} : { types }) })) satisfies AuditRecord[]);
  });

  routes.get('/events', (c) => {
    const caller = kernelOf(c, kernel);
    // Hono answers HEAD with this route's response, its body dropped unread: a subscription
    // behind it would never end. The stream's head alone.
    if (c.req.method === 'HEAD') return sseHead(c);
    return streamSSE(c, async (stream) => {
      const stop = new AbortController();
      const queue: KernelEvent[] = [];
      let wake: (() => void) | undefined;
      // Every kernel event names its agent; a user key sees those of the agents it reaches.
      const unsubscribe = caller.subscribe((event) => {
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
