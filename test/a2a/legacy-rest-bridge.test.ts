import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLegacyRestListener } from '../../src/a2a/legacy-rest-bridge.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';

afterEach(() => vi.restoreAllMocks());

describe("the SDK's A2A 0.3 HTTP+JSON router, as Loom serves it", () => {
  it('logs an error met after its answer started through the daemon’s logger, not standard error, and cuts the connection', async () => {
    const logger = createRecordingLogger();
    // The request is refused before any route asks the handler: a path segment that does not decode.
    const listener = await createLegacyRestListener({} as A2ARequestHandler, () => ({ isAuthenticated: false, userName: 'nobody' }), logger);
    if (listener === undefined) throw new Error('Express is not installed');
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    // An answer already started when the error reaches the router's error handler.
    const server = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': started\n\n', () => listener(request, response));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const read = await new Promise<{ status: number | undefined; body: string; cut: boolean }>((resolve, reject) => {
        const asked = httpRequest({ host: '127.0.0.1', port, path: '/v1/tasks/%E0%A4%A' }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode, body, cut: false }));
          response.on('error', () => resolve({ status: response.statusCode, body, cut: true }));
        });
        asked.on('error', reject);
        asked.end();
      });
      expect(read).toEqual({ status: 200, body: ': started\n\n', cut: true });
      expect(printed).not.toHaveBeenCalled();
      expect(logger.entries).toEqual([
        expect.objectContaining({
          level: 'warn',
          bindings: expect.objectContaining({ path: '/v1/tasks/%E0%A4%A' }) as object,
          message: 'A2A 0.3 HTTP+JSON request failed after its answer started; its connection is cut',
        }),
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
