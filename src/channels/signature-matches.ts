import { timingSafeEqual } from 'node:crypto';

/**
 * Whether the signature a request carries (`given`) is the one computed for it (`expected`),
 * compared in constant time; one of another length does not match.
 */
export function signatureMatches(expected: string, given: string): boolean {
  const expectedBytes = Buffer.from(expected);
  const givenBytes = Buffer.from(given);
  return expectedBytes.length === givenBytes.length && timingSafeEqual(expectedBytes, givenBytes);
}
