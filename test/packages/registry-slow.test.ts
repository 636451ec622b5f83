/**
 * A registry that answers too slowly, its body included, is an error naming the registry and the
 * time limit (docs/packages.md: "one that cannot be read is an error naming it"), not a bare
 * TimeoutError that the daemon answered with 500.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PackageError } from '../../src/errors/index.ts';
import { resolveFromRegistries } from '../../src/packages/registry.ts';

let server: Server;
let url: string;
const trickles = new Set<NodeJS.Timeout>();
const responses = new Set<ServerResponse>();
let onRequest = (): void => undefined;

beforeEach(async () => {
  // index.json: headers at once, then one byte every 20 ms of a body that never ends in time.
  server = createServer((_request, response) => {
    responses.add(response);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
    response.write('{', () => onRequest());
    const trickle = setInterval(() => response.write(' '), 20);
    trickles.add(trickle);
    response.on('close', () => clearInterval(trickle));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterEach(async () => {
  onRequest = () => undefined;
  for (const trickle of trickles) clearInterval(trickle);
  for (const response of responses) response.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the registry read to fail');
}

it('refuses a registry whose index.json trickles in past the time limit with a PackageError naming the registry and the limit', async () => {
  const error = await errorOf(resolveFromRegistries([url], '@nebo/agents/helper', { timeoutMs: 200 }));
  expect(error).toBeInstanceOf(PackageError);
  expect((error as PackageError).message).toBe(
    `cannot read registry "${url}": GET ${url}index.json took longer than 200 ms, the time limit for one request to a registry (REGISTRY_TIMEOUT_MS); check that the registry answers, or point [[registries]] at one that does`,
  );
  expect((error as PackageError).details).toMatchObject({ registry: url, timeoutMs: 200 });
});

it("keeps a caller's own cancellation as it is, not as the registry's fault", async () => {
  const controller = new AbortController();
  onRequest = () => controller.abort(new Error('cancelled by the caller'));
  const reading = resolveFromRegistries([url], '@nebo/agents/helper', { signal: controller.signal, timeoutMs: 60_000 });
  const error = await errorOf(reading);
  expect(error).not.toBeInstanceOf(PackageError);
  expect((error as Error).message).toBe('cancelled by the caller');
});
