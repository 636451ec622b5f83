import { createHmac, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../contracts/index.ts';
import { HttpRequestError, UnauthorizedError } from '../errors/index.ts';
import { formatIssues, safeParseJson } from '../validation/index.ts';
import { isRefusalForGood, type ChannelAdapter, type ChannelState, type InboundRequests, type InboundSink, type ReplyTarget } from './channel-adapter.ts';
import { signatureMatches } from './signature-matches.ts';

/** The headers of a signed request, both ways. */
export const WEBHOOK_TIMESTAMP_HEADER = 'x-loom-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'x-loom-signature';

/** What a webhook POST carries: one message. */
const WebhookMessageSchema = z.strictObject({
  id: z.string().min(1).max(200),
  user: z.strictObject({ id: z.string().min(1).max(200), name: z.string().max(200).optional() }),
  conversation: z.strictObject({
    id: z.string().min(1).max(200),
    kind: z.enum(['direct', 'group']).default('direct'),
    thread: z.string().min(1).max(200).optional(),
  }),
  text: z.string().min(1).max(100_000),
  mentioned: z.boolean().default(false),
});

/** `sha256=<hex>` of `<timestamp>.<body>` under `secret`: the signature both sides compute. */
export function signWebhook(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** A webhook channel: the `/hooks/<name>` handler, and the adapter replying to `reply_url`. */
export interface WebhookChannel extends ChannelAdapter, InboundRequests {}

/**
 * The generic signed webhook: a system POSTs `{id, user, conversation, text}` with an HMAC-SHA256
 * signature over the timestamp and the body; a timestamp further than `maxSkewSeconds` from the
 * clock is refused (a replay), and a message id seen before is a duplicate, answered once.
 * Replies are POSTed to `replyUrl`, signed the same way.
 */
export function createWebhookChannel(options: {
  name: string;
  secret: string;
  replyUrl: string;
  maxSkewSeconds: number;
  clock: Clock;
  fetch?: typeof fetch;
}): WebhookChannel {
  const { name, secret, replyUrl, maxSkewSeconds, clock } = options;
  const send = options.fetch ?? fetch;
  let sink: InboundSink | undefined;
  let state: ChannelState = 'stopped';
  let error: string | null = null;

  function verify(timestamp: string | undefined, signature: string | undefined, body: string): string | undefined {
    if (timestamp === undefined || signature === undefined) return `missing the ${WEBHOOK_TIMESTAMP_HEADER} and ${WEBHOOK_SIGNATURE_HEADER} headers`;
    const seconds = Number(timestamp);
    if (!Number.isInteger(seconds)) return `${WEBHOOK_TIMESTAMP_HEADER} must be Unix seconds, got ${JSON.stringify(timestamp.slice(0, 40))}`;
    const skew = Math.abs(clock.now() / 1000 - seconds);
    if (skew > maxSkewSeconds)
      return `the timestamp is ${Math.round(skew)} s from the daemon's clock, more than ${maxSkewSeconds} s: a replayed or delayed request is refused`;
    if (!signatureMatches(signWebhook(secret, timestamp, body), signature))
      return 'the signature does not match the body (HMAC-SHA256 of "<timestamp>.<body>" with the channel\'s secret)';
    return undefined;
  }

  async function post(payload: Record<string, unknown>): Promise<void> {
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(clock.now() / 1000));
    const response = await send(replyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [WEBHOOK_TIMESTAMP_HEADER]: timestamp, [WEBHOOK_SIGNATURE_HEADER]: signWebhook(secret, timestamp, body) },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) throw new WebhookReplyError(`channel "${name}": ${replyUrl} answered the reply with HTTP ${response.status}`, response.status);
  }

  return {
    kind: 'webhook',
    refusedForGood: (error) => error instanceof WebhookReplyError && isRefusalForGood(error.status),
    maxMessageLength: 100_000,

    async start(received) {
      sink = received;
      state = 'connected';
      error = null;
      return Promise.resolve();
    },

    async stop() {
      sink = undefined;
      state = 'stopped';
      return Promise.resolve();
    },

    async handle(request) {
      const body = await request.text();
      const refused = verify(request.headers.get(WEBHOOK_TIMESTAMP_HEADER) ?? undefined, request.headers.get(WEBHOOK_SIGNATURE_HEADER) ?? undefined, body);
      if (refused !== undefined) throw new UnauthorizedError(`channel "${name}": ${refused}`);
      const json = safeParseJson(body);
      if (!json.ok) throw new HttpRequestError('INVALID_REQUEST', `channel "${name}": the body is not JSON: ${json.message}`);
      const parsed = WebhookMessageSchema.safeParse(json.value);
      if (!parsed.success) throw new HttpRequestError('INVALID_REQUEST', `channel "${name}": ${formatIssues(parsed.error, { style: 'json' }).join('; ')}`);
      if (sink === undefined) throw new HttpRequestError('CHANNEL_STOPPED', `channel "${name}" is not running`);
      const message = parsed.data;
      const { duplicate } = await sink({
        platformId: message.id,
        user: { id: message.user.id, name: message.user.name ?? null },
        conversation: { id: message.conversation.id, kind: message.conversation.kind, thread: message.conversation.thread ?? null },
        mentioned: message.mentioned,
        text: message.text,
      });
      return Response.json({ accepted: true, duplicate }, { status: 202 });
    },

    async send(target: ReplyTarget, text: string) {
      const messageId = randomUUID();
      try {
        await post({ message_id: messageId, conversation: { id: target.conversationId, thread: target.thread }, text });
        error = null;
      } catch (caught) {
        error = caught instanceof Error ? caught.message : String(caught);
        throw caught;
      }
      return { messageId };
    },

    state: () => ({ state, error }),
  };
}

/** The reply URL answered a reply with an HTTP error: its status says whether to try again. */
class WebhookReplyError extends Error {
  readonly status: number;

  constructor(message: string, status: number) {
    super(message);
    this.name = 'WebhookReplyError';
    this.status = status;
  }
}
