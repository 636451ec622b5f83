import { Hono } from 'hono';
import type { ChannelService } from '../channels/index.ts';
import type { ChannelPairingRecord } from '../contracts/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';
import { HttpRequestError } from '../errors/index.ts';
import type { ChannelView, PairingView } from '../wire/index.ts';

/** The API's view of a pairing record (snake_case, its approval time as an ISO string). */
export function toPairingView(pairing: ChannelPairingRecord): PairingView {
  return {
    code: pairing.code,
    channel: pairing.channel,
    user_id: pairing.userId,
    user_name: pairing.userName,
    approved_at: new Date(pairing.approvedAt ?? 0).toISOString(),
  };
}

/**
 * `/api/channels`: the channels' state, their last message and the pairing codes waiting (owner
 * only: a code lets a person in), and the owner's approval of a code.
 */
export function createChannelRoutes(options: { channels: ChannelService; kernel: Kernel }): Hono<HttpEnv> {
  const { channels, kernel } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    kernelOf(c, kernel).require('list channels and their pairing codes');
    return c.json((await channels.list()) satisfies ChannelView[]);
  });

  routes.post('/pairings/:code/approve', async (c) => {
    kernelOf(c, kernel).require('approve a pairing');
    return c.json(toPairingView(await channels.approve(c.req.param('code'))) satisfies PairingView);
  });

  return routes;
}

/**
 * `POST /hooks/<channel>`: the inbound door of a channel the platform reaches over HTTP (a
 * signed webhook, Slack's Events API), authenticated by the platform's signature rather than an
 * API key.
 */
export async function answerWebhook(channels: ChannelService | undefined, name: string, request: Request): Promise<Response> {
  const channel = channels?.inbound(name);
  if (channel === undefined)
    throw new HttpRequestError(
      'ROUTE_NOT_FOUND',
      `no channel named "${name}" that takes requests over HTTP is running; [[channels]] in config.toml lists them`,
    );
  return channel.handle(request);
}
