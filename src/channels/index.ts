/**
 * Channels (spec/01 steps 1 and 2): people talk to agents from chat platforms and webhooks. Each
 * adapter sits on the platform's maintained SDK; the service stores what comes in before it is
 * acknowledged, applies the channel's policy, gives each person a caller the kernel checks, and
 * answers in a session per conversation.
 */
export type { ChangeSink, ChannelAdapter, ChannelState, Choice, ChoiceSink, InboundChange, InboundChoice, InboundMessage, InboundRequests, InboundSink, ReplyTarget } from './channel-adapter.ts';
export { decide } from './channel-policy.ts';
export type { PolicyDecision } from './channel-policy.ts';
export { createChannelService, EDIT_INTERVAL_MS } from './channel-service.ts';
export type { ChannelService, ChannelServiceOptions, ChannelView } from './channel-service.ts';
export { createDiscordChannel } from './discord-channel.ts';
export { createEmailChannel, newText } from './email-channel.ts';
export { createSlackChannel, signSlackRequest } from './slack-channel.ts';
export type { SlackReceiver } from './slack-channel.ts';
export { splitReply } from './split-reply.ts';
export { toTelegramHtml } from './telegram-format.ts';
export { createTelegramChannel } from './telegram-channel.ts';
export { createWebhookChannel, signWebhook, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from './webhook-channel.ts';
export type { WebhookChannel } from './webhook-channel.ts';
