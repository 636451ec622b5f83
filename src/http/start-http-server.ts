import { type AddressInfo, Server } from 'node:net';
import { serve } from '@hono/node-server';
import { ALREADY_SENT_HEADER, RESPONSE_ALREADY_SENT } from './response-already-sent.ts';

/** A listening HTTP server. */
export interface RunningHttpServer {
  /** `http://host:port`, with the port actually bound. */
  url: string;
  port: number;
  /**
   * Stops accepting connections at once, but keeps those open, idle keep-alive ones included: a
   * client may still send a request on one (an MCP client's cancel or DELETE, at the daemon's
   * stop). Once `drained` settles (what the doors still write), ends them all (streams included),
   * and resolves when closed.
   */
  close(drained?: Promise<unknown>): Promise<void>;
}

/** What can be served: a Hono app, or anything with its `fetch`. */
export interface FetchApp {
  fetch(request: Request, env: unknown): Response | Promise<Response>;
}

/**
 * The answer to a HEAD, as the Node server must see it. Hono answers a HEAD with its GET's answer
 * rebuilt without a body, which keeps `RESPONSE_ALREADY_SENT`'s header but not the object: the
 * Node server would write that copy out as an empty 200 over (or before) the route's own answer
 * (the A2A 0.3 HTTP+JSON router answers a HEAD as its GET, on Node's response).
 */
async function headAnswer(answer: Response | Promise<Response>): Promise<Response> {
  const response = await answer;
  return response.headers.has(ALREADY_SENT_HEADER) ? RESPONSE_ALREADY_SENT : response;
}

/**
 * Serves `app` with @hono/node-server on `host`:`port` (port 0 picks a free one).
 * @throws the listen error (e.g. `EADDRINUSE`) when the port cannot be bound.
 */
export async function startHttpServer(app: FetchApp, options: { host: string; port: number }): Promise<RunningHttpServer> {
  const server = serve({
    fetch: (request, env) => (request.method === 'HEAD' ? headAnswer(app.fetch(request, env)) : app.fetch(request, env)),
    hostname: options.host,
    port: options.port,
  });
  await new Promise<void>((resolve, reject) => {
    if (server.listening) {
      resolve();
      return;
    }
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async (drained) => {
      // The listener alone: Node's own `close` (19 and later) also ends the idle keep-alive
      // connections at once, so a client whose other connections are busy (a call's stream, a
      // session's GET) could send nothing more, its cancel of that call included (ECONNREFUSED).
      const closed = new Promise<void>((resolve, reject) =>
        Server.prototype.close.call(server, (error?: Error) => (error === undefined ? resolve() : reject(error))),
      );
      // Awaited below, once the connections are cut: not an unhandled rejection meanwhile.
      closed.catch(() => undefined);
      await drained?.catch(() => undefined);
      // Node's own close now (the listener already closed): it ends the idle connections and stops timing requests.
      server.close();
      if ('closeAllConnections' in server) server.closeAllConnections();
      await closed;
    },
  };
}
