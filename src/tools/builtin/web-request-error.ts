import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/** A web request that failed on the wire: DNS, connection, too many redirects, a bad body, a timeout. */
export class WebRequestError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('WEB_REQUEST_FAILED', 'third-party', message, options);
  }
}
