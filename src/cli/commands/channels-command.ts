import type { Command } from 'commander';
import type { ChannelView } from '../../channels/index.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTable } from '../format.ts';
import { withBackend } from './agent-commands.ts';

function formatList(channels: readonly ChannelView[]): string {
  if (channels.length === 0) return 'no channels: add [[channels]] to config.toml (see docs/channels.md)\n';
  return formatTable(
    ['NAME', 'KIND', 'AGENT', 'STATE', 'LAST MESSAGE', 'WAITING'],
    channels.map((channel) => [channel.name, channel.kind, channel.agent, channel.state, channel.lastMessageAt ?? '-', String(channel.pendingPairings.length)]),
  );
}

function formatStatus(channels: readonly ChannelView[]): string {
  if (channels.length === 0) return formatList(channels);
  return (
    channels
      .map((channel) => {
        const lines = [
          `${channel.name} (${channel.kind}) → agent ${channel.agent}: ${channel.state}${channel.error === null ? '' : ` — ${channel.error}`}`,
          `  last message: ${channel.lastMessageAt ?? 'none yet'}`,
          `  direct messages: ${channel.policy.direct}; groups: ${channel.policy.groups}${channel.policy.groups === 'closed' ? '' : channel.policy.require_mention ? ' (mention required)' : ''}; ${channel.policy.messages_per_minute} messages a minute per person`,
        ];
        for (const pairing of channel.pendingPairings)
          lines.push(
            `  waiting: ${pairing.userName ?? pairing.userId} (${pairing.userId}) since ${pairing.requestedAt} — loom channels approve ${pairing.code}`,
          );
        return lines.join('\n');
      })
      .join('\n\n') + '\n'
  );
}

/** `loom channels …`: the channels of config.toml, their state, and the owner's pairing approvals. */
export function registerChannelsCommand(program: Command, io: CliIo): void {
  const channels = program
    .command('channels')
    .description('list channels (Telegram, Slack, Discord, email, webhooks), show their state, approve people who asked to pair')
    .addHelpText(
      'after',
      '\nChannels are configured as [[channels]] in config.toml and run in the daemon.\n\nExample:\n  $ loom channels list\n  $ loom channels status\n  $ loom channels approve K7QH2M\n',
    );

  channels
    .command('list')
    .description('one line per channel: kind, agent, state, last message, pairing requests waiting')
    .option('--json', 'print a JSON array of the channels')
    .addHelpText('after', '\nExample:\n  $ loom channels list\n  $ loom channels list --json\n')
    .action(async (options: { json?: boolean }) => {
      const list = await withBackend(io, (backend) => backend.channels.list());
      io.stdout(options.json === true ? `${JSON.stringify(list, null, 2)}\n` : formatList(list));
    });

  channels
    .command('status')
    .description('each channel in full: state and error, last message, policy, and who waits for pairing (with the command to approve)')
    .option('--json', 'print a JSON array of the channels')
    .addHelpText('after', '\nExample:\n  $ loom channels status\n  $ loom channels approve K7QH2M   # a code it shows as waiting\n')
    .action(async (options: { json?: boolean }) => {
      const list = await withBackend(io, (backend) => backend.channels.list());
      io.stdout(options.json === true ? `${JSON.stringify(list, null, 2)}\n` : formatStatus(list));
    });

  channels
    .command('approve <code>')
    .description("let the person who was given this pairing code talk to the channel's agent")
    .option('--json', 'print the approved pairing as JSON')
    .addHelpText(
      'after',
      '\nA person who messages a channel with direct = "pairing" and is not on its allow_users gets a code;\nthey send it to you, and you approve it here.\n\nExample:\n  $ loom channels approve K7QH2M\n',
    )
    .action(async (code: string, options: { json?: boolean }) => {
      const pairing = await withBackend(io, (backend) => backend.channels.approve(code));
      io.stdout(
        options.json === true
          ? `${JSON.stringify(pairing, null, 2)}\n`
          : `approved: ${pairing.user_name ?? pairing.user_id} (${pairing.user_id}) may now talk on channel ${pairing.channel}\n`,
      );
    });
}
