import type { ChannelConfig } from '../config/index.ts';
import type { InboundMessage } from './channel-adapter.ts';

/** What the policy makes of a message: answer it, ignore it quietly, refuse it with a reply, or offer pairing. */
export type PolicyDecision = { kind: 'allow' } | { kind: 'ignore'; reason: string; audit: boolean } | { kind: 'refuse'; reason: string } | { kind: 'pair' };

/**
 * spec/01 step 2, the channel's DM/group policy, deny by default. `paired`: whether the owner
 * approved this person's pairing code. Groups that are not allowed, and group messages that do
 * not mention the bot when a mention is required, are ignored without a word (a bot answering
 * every group it is added to would be noise); a refused direct message is told why.
 */
export function decide(message: InboundMessage, policy: ChannelConfig['policy'], paired: boolean): PolicyDecision {
  const listed = policy.allow_users.includes(message.user.id);
  if (message.conversation.kind === 'direct') {
    switch (policy.direct) {
      case 'open':
        return { kind: 'allow' };
      case 'closed':
        return { kind: 'refuse', reason: 'direct messages are closed on this channel' };
      case 'allowlist':
        return listed ? { kind: 'allow' } : { kind: 'refuse', reason: "not on the channel's allow_users" };
      case 'pairing':
        return listed || paired ? { kind: 'allow' } : { kind: 'pair' };
    }
  }
  const group = message.conversation.id;
  if (policy.groups === 'closed') return { kind: 'ignore', reason: 'groups are closed on this channel', audit: true };
  if (policy.groups === 'allowlist' && !policy.allow_groups.includes(group))
    return { kind: 'ignore', reason: `group "${group}" is not on the channel's allow_groups`, audit: true };
  if (policy.allow_users.length > 0 && !listed) return { kind: 'ignore', reason: "not on the channel's allow_users", audit: true };
  if (policy.require_mention && !message.mentioned) return { kind: 'ignore', reason: 'a group message without a mention', audit: false };
  return { kind: 'allow' };
}
