import { connect, createServer, type Socket } from 'node:net';

/** A TCP proxy on 127.0.0.1 in front of one server, whose link a test can pause, resume and cut. */
export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's (`postgres://user:pw@127.0.0.1:<port>/db`). */
  urlFor(url: string): string;
  /**
   * Stops forwarding in both directions, as a network partition does: nothing is closed and
   * nothing is lost. Bytes, ends and resets are held until `resume` (TCP would retransmit them
   * once the link is back); a new connection is accepted and held, and reaches the server only
   * then. Pausing again does nothing.
   */
  pause(): void;
  /** Forwards what it held, and everything after. Resuming while not paused does nothing. */
  resume(): void;
  /** Destroys every connection through it now, on both sides (each peer sees its connection cut); new connections pass as before. */
  cut(): void;
  /** Stops listening and destroys every connection. Idempotent. */
  close(): Promise<void>;
}

/** A connection through the proxy: the client's socket, and the one to the server once opened. */
interface Link {
  client: Socket;
  server: Socket | undefined;
  /** What happened while paused (an end to pass on, a failure), done at `resume` in order. */
  held: (() => void)[];
}

/**
 * Starts a TCP proxy on a free port of 127.0.0.1 that forwards every connection to
 * `target.host:target.port` (127.0.0.1 by default).
 *
 * @example
 * const proxy = await startTcpProxy({ port: 5432 });
 * const url = proxy.urlFor('postgres://loom:secret@127.0.0.1:5432/loom');
 * proxy.pause(); // statements on `url` now wait, unanswered
 * proxy.resume();
 */
export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const host = target.host ?? '127.0.0.1';
  const links = new Set<Link>();
  let paused = false;
  let closed = false;

  const destroy = (link: Link): void => {
    links.delete(link);
    link.client.destroy();
    link.server?.destroy();
  };

  /** Does `action` now, or at `resume` while paused. */
  const whenForwarding = (link: Link, action: () => void): void => {
    if (paused) link.held.push(action);
    else action();
  };

  /** Copies `from`'s bytes to `to`; a paused socket reads nothing (its bytes wait in its buffers, with back pressure). */
  const forward = (link: Link, from: Socket, to: Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => {
          if (!paused) from.resume();
        });
      }
    });
    // A half close passes on as one. Paused, a socket may still see its peer's end once its buffer is empty: held too.
    from.on('end', () =>
      whenForwarding(link, () => {
        if (links.has(link)) to.end();
      }),
    );
    from.on('error', () => whenForwarding(link, () => destroy(link)));
    from.on('close', () => whenForwarding(link, () => destroy(link)));
  };

  const open = (link: Link): void => {
    const server = connect({ host, port: target.port, allowHalfOpen: true });
    link.server = server;
    forward(link, link.client, server);
    forward(link, server, link.client);
    if (paused) server.pause();
    else link.client.resume();
  };

  // Half open, so that an end passes on as one, and only when forwarding.
  const listener = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => {
    if (closed) {
      client.destroy();
      return;
    }
    const link: Link = { client, server: undefined, held: [] };
    links.add(link);
    // Not read until resume (pauseOnConnect): the client waits for an answer to its first bytes, as across a partition.
    if (paused) return;
    open(link);
  });

  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });
  const address = listener.address();
  if (typeof address !== 'object' || address === null) throw new Error('cannot start the TCP proxy: it has no port');
  const { port } = address;

  return {
    port,

    urlFor(url) {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.toString();
    },

    pause() {
      if (paused) return;
      paused = true;
      for (const link of links) {
        link.client.pause();
        link.server?.pause();
      }
    },

    resume() {
      if (!paused) return;
      paused = false;
      for (const link of [...links]) {
        if (link.server === undefined) open(link);
        else {
          link.client.resume();
          link.server.resume();
        }
        for (const action of link.held.splice(0)) action();
      }
    },

    cut() {
      for (const link of [...links]) destroy(link);
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const link of [...links]) destroy(link);
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
