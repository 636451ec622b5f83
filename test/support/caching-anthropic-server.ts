import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted Anthropic Messages API that keeps a prompt cache as Anthropic does, so the real
 * provider code runs against it and the usage it reports says what caching saved:
 *
 * - a request is cut into blocks in Anthropic's order (each tool, each system block, each
 *   content block of each message), each counted at a token per four characters of its JSON;
 * - only a block with `cache_control` (a breakpoint; four at most, or the request is refused as
 *   Anthropic refuses it) ends a prefix that can be cached;
 * - at each breakpoint the cache is looked up for the prefix ending there and, failing that, for
 *   the prefixes ending at each of the 20 blocks before it; the longest found is read from the
 *   cache (`cache_read_input_tokens`);
 * - the prefix up to each breakpoint is written to the cache, and what lies between the end of
 *   what was read and the last breakpoint is billed as written (`cache_creation_input_tokens`);
 *   a prefix shorter than `minCacheTokens` is not cached (Anthropic's minimum, 1024 tokens on
 *   Sonnet);
 * - the rest is `input_tokens`.
 */

/** What the scripted model answers. */
export interface CachingReply {
  text?: string;
  toolCalls?: { name: string; input: Record<string, unknown> }[];
  outputTokens?: number;
}

/** How one request was billed. */
export interface CacheAccount {
  /** Input tokens not read from or written to the cache. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** How many breakpoints the request carried. */
  breakpoints: number;
  /** The parsed request body. */
  body: Record<string, unknown>;
}

/** A running caching Anthropic server. */
export interface CachingAnthropicServer {
  /** The base URL to give the Anthropic provider, ending in `/v1`. */
  url: string;
  /** Every request, in order, with how it was billed. */
  accounts: CacheAccount[];
  close(): Promise<void>;
}

/** Blocks before a breakpoint where Anthropic looks for an earlier cached prefix. */
const LOOKBACK_BLOCKS = 20;
const MAX_BREAKPOINTS = 4;

const tokensOf = (value: unknown): number => Math.ceil(JSON.stringify(value).length / 4);

/** A block without its `cache_control`: a breakpoint does not change what the prefix holds. */
function canonical(block: unknown): string {
  if (typeof block !== 'object' || block === null) return JSON.stringify(block);
  const { cache_control: _mark, ...rest } = block as Record<string, unknown>;
  return JSON.stringify(rest);
}

interface Block {
  value: unknown;
  breakpoint: boolean;
}

function blocksOf(body: Record<string, unknown>): Block[] {
  const blocks: Block[] = [];
  const add = (value: unknown): void => {
    blocks.push({
      value,
      breakpoint:
        typeof value === 'object' &&
        value !== null &&
        'cache_control' in value &&
        (value as Record<string, unknown>)['cache_control'] !== undefined &&
        (value as Record<string, unknown>)['cache_control'] !== null,
    });
  };
  for (const tool of (body['tools'] as unknown[] | undefined) ?? []) add(tool);
  const system = body['system'];
  if (typeof system === 'string') add({ type: 'text', text: system });
  else for (const block of (system as unknown[] | undefined) ?? []) add(block);
  for (const message of (body['messages'] as { role: string; content: unknown }[] | undefined) ?? []) {
    if (typeof message.content === 'string') add({ role: message.role, type: 'text', text: message.content });
    else for (const block of message.content as unknown[]) add({ role: message.role, ...(block as Record<string, unknown>) });
  }
  return blocks;
}

/**
 * Starts the server on 127.0.0.1 (port 0). `reply` gives the answer to each request (its index
 * counts from 0). `breakpoints` in an account counts those the server honoured.
 */
export async function startCachingAnthropicServer(options: {
  reply: (body: Record<string, unknown>, index: number) => CachingReply;
  minCacheTokens?: number;
  /** False: a server that caches nothing, whatever the request marks (what a request without breakpoints is billed). */
  caching?: boolean;
}): Promise<CachingAnthropicServer> {
  const minCacheTokens = options.minCacheTokens ?? 1024;
  const caching = options.caching ?? true;
  const cache = new Set<string>();
  const accounts: CacheAccount[] = [];
  let messageIds = 0;

  const bill = (body: Record<string, unknown>): CacheAccount | string => {
    const blocks = blocksOf(body);
    const hashes: string[] = [];
    const cumulative: number[] = [];
    const hash = createHash('sha256');
    let total = 0;
    for (const block of blocks) {
      hash.update(canonical(block.value));
      hashes.push(hash.copy().digest('hex'));
      total += tokensOf(block.value);
      cumulative.push(total);
    }
    const breakpoints = blocks.flatMap((block, index) => (block.breakpoint && caching ? [index] : []));
    if (breakpoints.length > MAX_BREAKPOINTS) return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints.length}.`;
    let readEnd = -1;
    for (const point of breakpoints) {
      for (let index = point; index >= Math.max(0, point - LOOKBACK_BLOCKS); index--) {
        if (cache.has(hashes[index] as string)) {
          readEnd = Math.max(readEnd, index);
          break;
        }
      }
    }
    const read = readEnd === -1 ? 0 : (cumulative[readEnd] as number);
    let written = 0;
    const last = breakpoints.at(-1);
    if (last !== undefined && last > readEnd && (cumulative[last] as number) >= minCacheTokens) {
      written = (cumulative[last] as number) - read;
      for (const point of breakpoints) if ((cumulative[point] as number) >= minCacheTokens) cache.add(hashes[point] as string);
    }
    return { inputTokens: total - read - written, cacheReadTokens: read, cacheWriteTokens: written, breakpoints: breakpoints.length, body };
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method !== 'POST' || !(request.url ?? '').endsWith('/messages')) {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'no such route' } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    const account = bill(body);
    if (typeof account === 'string') {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: account } }));
      return;
    }
    const reply = options.reply(body, accounts.length);
    accounts.push(account);
    const usage = {
      input_tokens: account.inputTokens,
      cache_creation_input_tokens: account.cacheWriteTokens,
      cache_read_input_tokens: account.cacheReadTokens,
    };
    const outputTokens = reply.outputTokens ?? 20;
    const stopReason = (reply.toolCalls ?? []).length > 0 ? 'tool_use' : 'end_turn';
    const id = `msg_${String(++messageIds).padStart(6, '0')}`;
    const calls = (reply.toolCalls ?? []).map((call, index) => ({ type: 'tool_use', id: `toolu_${id}_${index}`, name: call.name, input: call.input }));
    const model = typeof body['model'] === 'string' ? body['model'] : 'claude-sonnet-4-5';
    if (body['stream'] !== true) {
      const content = [...(reply.text === undefined ? [] : [{ type: 'text', text: reply.text }]), ...calls];
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { ...usage, output_tokens: outputTokens },
        }),
      );
      return;
    }
    const events: Record<string, unknown>[] = [
      {
        type: 'message_start',
        message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
      },
    ];
    let index = 0;
    if (reply.text !== undefined) {
      events.push(
        { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index, delta: { type: 'text_delta', text: reply.text } },
        { type: 'content_block_stop', index },
      );
      index++;
    }
    for (const call of calls) {
      events.push(
        { type: 'content_block_start', index, content_block: { ...call, input: {} } },
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) } },
        { type: 'content_block_stop', index },
      );
      index++;
    }
    events.push(
      { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } },
      { type: 'message_stop' },
    );
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of events) response.write(`event: ${event['type'] as string}\ndata: ${JSON.stringify(event)}\n\n`);
    response.end();
  };

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: String(error) } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    accounts,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}
