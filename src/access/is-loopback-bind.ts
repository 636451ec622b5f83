import { isLoopbackAddress } from './is-loopback-address.ts';

/**
 * Whether `host` (an address a server binds, or a server's host name, `[::1]` in brackets or
 * not) is this machine's loopback, where only this machine can reach it: `localhost` or a
 * loopback address.
 */
export function isLoopbackBind(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare.toLowerCase() === 'localhost' || isLoopbackAddress(bare);
}
