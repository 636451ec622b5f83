import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/**
 * A web tool refusing to connect to an address it must not reach: loopback, private,
 * link-local, unspecified or cloud-metadata, without an explicit `net_connect` grant for it.
 */
export class NetAddressRefusedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('NET_ADDRESS_REFUSED', 'user', message, options);
  }
}
