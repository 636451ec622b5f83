import { LoomError, type LoomErrorOptions } from '../errors/index.ts';

/**
 * A push-notification webhook Loom will not call: not an absolute http(s) URL, a cloud-metadata
 * host or address (always), or a loopback, private, link-local or unspecified address (unless
 * `[a2a].push_allow_private_network` is set).
 */
export class PushWebhookRefusedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('PUSH_WEBHOOK_REFUSED', 'user', message, options);
  }
}
