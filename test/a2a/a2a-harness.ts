import { Hono } from 'hono';
import { ConfigSchema } from '../../src/config/index.ts';
import {
  createA2aServer,
  type A2aPushOptions,
  type A2aServer,
  type A2aServerOptions,
  InMemoryA2aTaskRepository,
  type A2aTaskRepository,
} from '../../src/a2a/index.ts';
import { type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

/** Loom's A2A server on a real kernel, over real HTTP on 127.0.0.1. */
export interface A2aHarness {
  url: string;
  host: TestHost;
  a2a: A2aServer;
  repository: A2aTaskRepository;
  server: RunningHttpServer;
  request(path: string, init?: RequestInit): Promise<Response>;
  /** How many requests' clients have left before their answer ended (as the server heard it: their connection closed). */
  clientsLeft(): number;
  close(): Promise<void>;
}

/**
 * Starts the server as the daemon builds it: push-notification configs in the host's SQLite store,
 * deliveries on the host's fake clock and recorded in its audit log (`push` overrides some of
 * that; `push: false` leaves push notifications out). Tasks are kept in memory unless given a
 * `repository`, or `storeTasks` (the host's SQLite store, as the daemon keeps them). `daemon`: the
 * host resumes the turns the journal holds as running, as the daemon does at start. `kernel`: what
 * the server is given in place of the host's kernel (one that does a part differently). `callerOf`:
 * who asks each request (as the API's keys say), else the owner.
 */
export async function startA2a(
  dir: string,
  options: {
    config?: Record<string, unknown>;
    maxTasks?: number;
    repository?: A2aTaskRepository;
    storeTasks?: boolean;
    daemon?: boolean;
    push?: Partial<A2aPushOptions> | false;
    kernel?: (kernel: Kernel) => Kernel;
    callerOf?: A2aServerOptions['callerOf'];
  } = {},
): Promise<A2aHarness> {
  const host = await openTestHost(dir, options.config ?? {}, undefined, { runSchedules: options.daemon ?? false });
  const repository = options.repository ?? (options.storeTasks === true ? host.store.tasks : new InMemoryA2aTaskRepository());
  const push: A2aPushOptions | undefined =
    options.push === false
      ? undefined
      : { repository: host.store.a2aPushConfigs, clock: host.clock, record: (event) => host.store.events.append(event), ...options.push };
  const a2a = createA2aServer({
    kernel: options.kernel?.(host.kernel) ?? host.kernel,
    config: ConfigSchema.parse(options.config ?? {}),
    repository,
    logger: createSilentLogger(),
    now: () => host.clock.now(),
    push,
    ...(options.maxTasks === undefined ? {} : { maxTasks: options.maxTasks }),
    ...(options.callerOf === undefined ? {} : { callerOf: options.callerOf }),
  });
  const app = new Hono();
  let left = 0;
  app.use('*', async (c, next) => {
    // Aborted when the connection closes before the answer ended, whoever answers it (the SDK's 0.3 router too).
    c.req.raw.signal.addEventListener('abort', () => (left += 1), { once: true });
    await next();
  });
  app.route('/', a2a.publicRoutes);
  app.route('/', a2a.routes);
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    host,
    a2a,
    repository,
    server,
    request: (path, init) => fetch(`${server.url}${path}`, init),
    clientsLeft: () => left,
    close: async () => {
      a2a.close();
      await server.close();
      await host.close();
    },
  };
}
