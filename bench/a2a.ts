import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Hono } from 'hono';
import { createA2aServer, InMemoryA2aTaskRepository } from '../src/a2a/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import { startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const ROUND_TRIPS = 300;
const IN_FLIGHT = 200;
const AGENTS = 20;

function send(text: string) {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

function completed(result: unknown): boolean {
  return (
    typeof result === 'object' &&
    result !== null &&
    'status' in result &&
    (result as { status?: { state?: TaskState } }).status?.state === TaskState.TASK_STATE_COMPLETED
  );
}

/** `a2a-task`: SendMessage round trips (JSON-RPC, A2A 1.0) against an in-process model, then 200 tasks in flight at once. */
export async function a2aTaskBench(): Promise<Record<string, unknown>> {
  const model = createInstantModel();
  const bench = await openInstantBenchKernel(model);
  const a2a = createA2aServer({
    kernel: bench.kernel,
    config: ConfigSchema.parse({}),
    repository: new InMemoryA2aTaskRepository(),
    logger: createSilentLogger(),
  });
  const app = new Hono();
  app.route('/', a2a.publicRoutes);
  app.route('/', a2a.routes);
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  try {
    for (let index = 0; index < AGENTS; index += 1) {
      await bench.kernel.spawn(parseManifest(`name = "a2a-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
    }
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory()], preferredTransports: ['JSONRPC'] }),
    );
    const clients: Client[] = [];
    for (let index = 0; index < AGENTS; index += 1) clients.push(await factory.createFromUrl(`${server.url}/a2a/a2a-${index}/.well-known/agent-card.json`, ''));
    const first = clients[0];
    if (first === undefined) throw new Error('no client');

    const durations: number[] = [];
    let roundTripErrors = 0;
    for (let index = 0; index < ROUND_TRIPS; index += 1) {
      const started = performance.now();
      try {
        if (!completed(await first.sendMessage(send('hello')))) roundTripErrors += 1;
      } catch {
        roundTripErrors += 1;
      }
      durations.push(performance.now() - started);
    }

    let inFlightErrors = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, index) => {
        try {
          if (!completed(await clients[index % AGENTS]?.sendMessage(send(`task ${index}`)))) inFlightErrors += 1;
        } catch {
          inFlightErrors += 1;
        }
      }),
    );
    const inFlightMs = performance.now() - started;
    return {
      bench: 'a2a-task',
      ...summarize(durations),
      errors: roundTripErrors,
      in_flight_tasks: IN_FLIGHT,
      in_flight_agents: AGENTS,
      in_flight_total_ms: round(inFlightMs),
      in_flight_errors: inFlightErrors,
    };
  } finally {
    a2a.close();
    await server.close();
    await bench.dispose();
  }
}
