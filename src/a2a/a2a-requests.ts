/**
 * `A2aRequests`: what the A2A server keeps of each request it hands to the SDK: the call context
 * (its caller, and the charge of its turn), the signal of its connection, the refusal met
 * charging its turn (the answer to the request in place of the error the SDK made of it), and
 * where its body is read.
 */
import { ServerCallContext } from '@a2a-js/sdk/server';
import type { Context } from 'hono';
import type { A2aAccess } from './a2a-access.ts';
import type { A2aServerOptions } from './a2a-server-options.ts';
import { LoomA2aUser } from './agent-executor.ts';

/** The requests of the A2A server, as the SDK sees them. */
export class A2aRequests {
  readonly #chargeTurn: A2aServerOptions['chargeTurn'];
  readonly #bodyOf: A2aServerOptions['bodyOf'];
  readonly #access: A2aAccess;
  /** Requests already charged for their turn (a request sends one message at most). */
  readonly #charged = new WeakSet<Request>();
  /** The refusals met charging a request's turn. */
  readonly #refusals = new WeakMap<Request, Error>();
  /** The signal of each request's connection, by the context handed to the SDK: a task followed here stops being followed when its client leaves. */
  readonly #signals = new WeakMap<ServerCallContext, AbortSignal>();

  constructor(options: Pick<A2aServerOptions, 'chargeTurn' | 'bodyOf'>, access: A2aAccess) {
    this.#chargeTurn = options.chargeTurn;
    this.#bodyOf = options.bodyOf;
    this.#access = access;
  }

  /**
   * Charges request `c` for its turn, once (see `chargeTurn`). A refusal is recorded as well as
   * thrown: the SDK answers what a handler throws as its own error, and the request is answered
   * with the refusal instead (see {@link A2aRequests.refusalOf}).
   */
  chargeTurnOf(c: Context): () => void {
    return () => {
      if (this.#chargeTurn === undefined || this.#charged.has(c.req.raw)) return;
      this.#charged.add(c.req.raw);
      try {
        this.#chargeTurn(c);
      } catch (error) {
        if (error instanceof Error) this.#refusals.set(c.req.raw, error);
        throw error;
      }
    };
  }

  /** The text of request `c`'s body: as the API in front read it (see `bodyOf`), else read from the request. */
  async textOf(c: Context): Promise<string> {
    return this.#bodyOf?.(c) ?? (await c.req.text());
  }

  /** The refusal met charging the request's turn, if any. */
  refusalOf(request: Request): Error | undefined {
    return this.#refusals.get(request);
  }

  /**
   * The SDK's call context of request `c`: its caller and its turn's charge, and the A2A version asked.
   * @throws {UnauthorizedError} when nobody is behind the request.
   */
  contextOf(c: Context, requestedVersion: string | undefined): ServerCallContext {
    const caller = this.#access.callerFor(c);
    const context = new ServerCallContext({
      user: new LoomA2aUser(caller, this.chargeTurnOf(c)),
      ...(requestedVersion === undefined ? {} : { requestedVersion }),
    });
    this.#signals.set(context, c.req.raw.signal);
    return context;
  }

  /** The signal of the connection of the request `context` was made for. */
  signalOf(context: ServerCallContext): AbortSignal | undefined {
    return this.#signals.get(context);
  }
}
