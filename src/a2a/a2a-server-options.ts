/**
 * What Loom's A2A server is built from (`A2aServerOptions`), and the defaults of its limits.
 */
import type { Context } from 'hono';
import type { Config } from '../config/index.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import type { Caller, Kernel } from '../kernel/index.ts';
import type { PushNotifierOptions } from './push-notifier.ts';
import type { A2aTaskRepository } from './task-repository.ts';

/**
 * How push notifications are kept and delivered (see {@link A2aServerOptions.push}): the
 * notifier's options that come from outside the A2A server.
 */
export type A2aPushOptions = Pick<PushNotifierOptions, 'repository' | 'clock' | 'record' | 'resolve' | 'attempts' | 'backoffMs' | 'timeoutMs'>;

/** What the A2A server is built from. */
export interface A2aServerOptions {
  kernel: Kernel;
  config: Pick<Config, 'a2a'>;
  repository: A2aTaskRepository;
  logger: Logger;
  now?: () => number;
  /** Bound of the task store (default 1,000). */
  maxTasks?: number;
  /** Largest message text accepted, in UTF-8 bytes (default 1 MiB): larger ones are refused as invalid params. */
  maxMessageBytes?: number;
  /** Largest JSON-RPC request body (default 4 MiB): larger ones are refused as an invalid request (-32600). */
  maxRequestBytes?: number;
  /**
   * The caller of a request (from the API's auth: `c.get('principal')`). When it returns
   * undefined (nobody authenticated, as on the public card paths), a request that would reach an
   * agent or a task is refused: deny by default. Omitted, every request is the owner's: a server
   * mounted without Loom's API in front, whose mounter authenticates.
   */
  callerOf?: (c: Context) => Caller | undefined;
  /**
   * Whether the API in front asks for keys (its authenticator's `keyed`). Then a card is shown
   * only to a caller whose key reaches its agent, or to anyone when `[a2a].public_agents` names
   * it (to nobody else: 404, as an unknown agent, on every card path and every agent's
   * endpoints), and cards declare the key schemes. Omitted, it is read from each request's
   * caller: a daemon without keys serves its loopback clients as the owner named `local`, a name
   * no key may take. Without `callerOf`, no keys: every card is shown, and none declares a scheme.
   */
  keyed?: boolean | undefined;
  /**
   * Charges the client of request `c` for the turn its message starts (from the API: the
   * rate-limit units of a message beyond the read the request was priced as); throws when the
   * client is out. Called once per request that sends a message, whatever its binding, before the
   * turn starts; its error is the answer (the API's 429). Omitted, turns are not charged here.
   */
  chargeTurn?: ((c: Context) => void) | undefined;
  /**
   * The body of request `c` when the API in front has read it already (it measures the bodies of
   * the doors whose SDKs parse them): the routes read that in place of the request's own body, which
   * is then used up. Omitted, or undefined for a request, the routes read the request.
   */
  bodyOf?: ((c: Context) => string | undefined) | undefined;
  /**
   * Push notifications (`capabilities.pushNotifications` on the cards): without them, or with
   * `[a2a].push_notifications = false`, push-notification requests are answered
   * PushNotificationNotSupportedError. Webhooks pass the address guard of `web_fetch`;
   * `[a2a].push_allow_private_network` lets loopback and private addresses through.
   */
  push?: A2aPushOptions | undefined;
  /**
   * Whether other nodes share the store now (docs/cluster.md): then the unfinished tasks it holds
   * may be theirs, running, and are not failed as the previous process's.
   */
  othersAlive?: (() => Promise<boolean>) | undefined;
  /**
   * Whether the store leases each running turn to its node (PostgreSQL, decision 0061): the turn of
   * an unfinished task that does not run here is waited for as one on another node (taken over
   * once its lease lapses), not asked for again every 30 s.
   */
  leasesTurns?: boolean | undefined;
  /**
   * Paces the following of a task another node runs (a resubscription here): read again at each
   * event of its agent this node hears, and every half second. Without it such a task is answered
   * as it is now.
   */
  clock?: Clock | undefined;
}

/** Default of {@link A2aServerOptions.maxMessageBytes}. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
/** Default of {@link A2aServerOptions.maxRequestBytes}. */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;
