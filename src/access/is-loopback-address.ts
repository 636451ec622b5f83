import { isIP } from 'node:net';

/**
 * Whether `address` is a loopback address: 127.0.0.0/8, `::1`, or an IPv4-mapped 127.x
 * (`::ffff:127.0.0.1`). Anything else, including an unknown (empty) address, is not.
 */
export function isLoopbackAddress(address: string): boolean {
  const plain = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(plain) === 4) return plain.startsWith('127.');
  if (isIP(plain) === 6) return plain === '::1' || plain === '0:0:0:0:0:0:0:1';
  return false;
}
