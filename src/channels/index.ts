/**
 * Channels (spec/01 steps 1 and 2): people talk to agents from chat platforms and webhooks. Each
 * adapter sits on the platform's maintained SDK; the service stores what comes in before it is
 * acknowledged, applies the channel's policy, gives each person a caller the kernel checks, and
 * answers in a session per conversation.
 */
export { channelPrincipal, createChannelService, pollsPlatform } from './channel-service.ts';
export type { ChannelService, ChannelView } from './channel-service.ts';
