import { randomUUID } from 'node:crypto';
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { PushNotificationStore, ServerCallContext, StoredPushNotificationConfig } from '@a2a-js/sdk/server';
import type { A2aPushConfigRecord, A2aPushConfigRepository } from '../contracts/index.ts';
import { isLoomError } from '../errors/index.ts';
import type { HostResolver } from '../tools/index.ts';
import { callerName, callerOfContext } from './agent-executor.ts';
import { vetWebhookUrl } from './webhook-guard.ts';

/** Most push-notification configs one task may have. */
export const MAX_PUSH_CONFIGS_PER_TASK = 10;
/** How long checking a webhook's host may take when a config is set, in milliseconds. */
export const PUSH_CONFIG_CHECK_TIMEOUT_MS = 10_000;

/** What {@link LoomPushConfigStore} is built from. */
export interface LoomPushConfigStoreOptions {
  repository: A2aPushConfigRepository;
  now: () => number;
  /** `[a2a].push_allow_private_network`: webhooks on loopback and private addresses allowed. */
  allowPrivateNetwork: boolean;
  /** The system resolver unless a test injects another. */
  resolve?: HostResolver | undefined;
}

/** The A2A revision a request came over, as push notifications are shaped for it: `0.3` or `1.0`. */
export function wireVersionOf(context: ServerCallContext): string {
  return context.requestedVersion.startsWith('0.') ? '0.3' : '1.0';
}

/** A stored config as the SDK's `TaskPushNotificationConfig`. */
export function toPushConfig(record: A2aPushConfigRecord): TaskPushNotificationConfig {
  return { tenant: '', id: record.id, taskId: record.taskId, url: record.url, token: record.token ?? '', authentication: record.authentication ?? undefined };
}

/**
 * The SDK's `PushNotificationStore` over the store's `a2aPushConfigs`, checking what a client
 * sets: the webhook passes the address guard (`vetWebhookUrl`), an id that can name it in a URL,
 * authentication with a scheme, at most {@link MAX_PUSH_CONFIGS_PER_TASK} per task. Bad input is
 * refused with RequestMalformedError (invalid params), naming what is wrong.
 *
 * Who may reach a config is decided before the SDK calls here: each operation first loads the
 * task in the caller's context, and a task the caller may not see is answered as not found.
 */
export class LoomPushConfigStore implements PushNotificationStore {
  readonly #options: LoomPushConfigStoreOptions;

  constructor(options: LoomPushConfigStoreOptions) {
    this.#options = options;
  }

  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    const url = config.url.trim();
    if (url === '') throw new RequestMalformedError("the push-notification config has no url: give the webhook that receives the task's updates");
    const id = config.id === '' ? randomUUID() : config.id;
    if (id.length > 128 || /[/?#\s]/.test(id))
      throw new RequestMalformedError(`push-notification config id "${id.slice(0, 128)}" is refused: at most 128 characters, without "/", "?", "#" or spaces`);
    const authentication = config.authentication;
    if (authentication !== undefined && authentication.scheme.trim() === '' && authentication.credentials !== '') {
      throw new RequestMalformedError('the push-notification config\'s authentication has credentials but no scheme (e.g. "Bearer")');
    }
    try {
      await vetWebhookUrl(url, {
        allowPrivateNetwork: this.#options.allowPrivateNetwork,
        resolve: this.#options.resolve,
        signal: AbortSignal.timeout(PUSH_CONFIG_CHECK_TIMEOUT_MS),
      });
    } catch (error) {
      if (isLoomError(error)) throw new RequestMalformedError(error.message);
      throw error;
    }
    const existing = await this.#options.repository.list(taskId);
    if (!existing.some((record) => record.id === id) && existing.length >= MAX_PUSH_CONFIGS_PER_TASK) {
      throw new RequestMalformedError(`task "${taskId}" has ${existing.length} push-notification configs, the most a task may have; delete one first`);
    }
    await this.#options.repository.put({
      taskId,
      id,
      url,
      token: config.token === '' ? null : config.token,
      authentication:
        authentication === undefined || authentication.scheme.trim() === ''
          ? null
          : { scheme: authentication.scheme.trim(), credentials: authentication.credentials },
      wireVersion: wireVersionOf(context),
      createdBy: callerName(callerOfContext(context) ?? { kind: 'user', role: 'owner' }),
      createdAt: this.#options.now(),
    });
    // The SDK reads the id (and the task) back from the config it passed.
    config.id = id;
    config.taskId = taskId;
    config.url = url;
  }

  async load(taskId: string, _context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    return (await this.#options.repository.list(taskId)).map(toPushConfig);
  }

  async loadWithMetadata(taskId: string, _context: ServerCallContext): Promise<StoredPushNotificationConfig[]> {
    return (await this.#options.repository.list(taskId)).map((record) => ({ config: toPushConfig(record), wireVersion: record.wireVersion }));
  }

  /**
   * Deletes one config (every config of the task when `configId` is undefined).
   * @throws {TaskNotFoundError} for an unknown config id; RequestMalformedError for an empty one.
   */
  async delete(taskId: string, _context: ServerCallContext, configId?: string): Promise<void> {
    if (configId === '') throw new RequestMalformedError(`give the id of the push-notification config of task "${taskId}" to delete`);
    if (configId === undefined) {
      for (const record of await this.#options.repository.list(taskId)) await this.#options.repository.delete(taskId, record.id);
      return;
    }
    if (!(await this.#options.repository.delete(taskId, configId)))
      throw new TaskNotFoundError(`no push-notification config "${configId}" for task "${taskId}"`);
  }
}
