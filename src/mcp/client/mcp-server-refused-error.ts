import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/**
 * An `[[mcp_servers]]` entry Loom refuses to connect to: a stdio command holding `..`, a URL
 * on a cloud-metadata (or, without `allow_private_network`, a private or loopback) address, or
 * a header naming an environment variable that is not set. Not retried: the entry must change.
 */
export class McpServerRefusedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('MCP_SERVER_REFUSED', 'user', message, options);
  }
}
