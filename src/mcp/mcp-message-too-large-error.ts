import { LoomError, type LoomErrorOptions } from '../errors/index.ts';

/** Bytes as people read them: `12,582,912`. */
function bytes(count: number): string {
  return count.toLocaleString('en-US');
}

/** The limit named the way spec/05 names it (`the 10 MB limit (10,485,760 bytes)`), or in bytes when it is no whole number of MB. */
function limitText(limit: number): string {
  const megabytes = limit / (1024 * 1024);
  return Number.isInteger(megabytes) ? `the ${megabytes} MB limit (${bytes(limit)} bytes)` : `the limit of ${bytes(limit)} bytes`;
}

/**
 * An MCP message over the size limit (spec/05's 10 MB), refused on its own: the connection and
 * every other request carry on. `size` is the message's length in bytes, or `undefined` when it
 * was not read to its end (an HTTP body cut off at the limit); the message then says "more than".
 *
 * @example
 * new McpMessageTooLargeError({ size: 12_582_912, limit: 10_485_760 }).message
 * // 'MCP message of 12,582,912 bytes is over the 10 MB limit (10,485,760 bytes)'
 */
export class McpMessageTooLargeError extends LoomError {
  readonly size: number | undefined;
  readonly limit: number;

  constructor(sizes: { size: number | undefined; limit: number }, options?: LoomErrorOptions) {
    const { size, limit } = sizes;
    const of = size === undefined ? `more than ${bytes(limit)} bytes` : `${bytes(size)} bytes`;
    super('MCP_MESSAGE_TOO_LARGE', 'third-party', `MCP message of ${of} is over ${limitText(limit)}`, {
      ...options,
      details: { ...(size === undefined ? {} : { size }), limit, ...options?.details },
    });
    this.size = size;
    this.limit = limit;
  }
}
