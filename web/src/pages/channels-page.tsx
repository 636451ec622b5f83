import { useState } from 'preact/hooks';
import { API, approvePairing } from '../api.ts';
import { Card, Empty, ErrorBox, PageHeader, StateBadge } from '../components.tsx';
import { errorText, formatTime } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import type { ChannelView } from '../types.ts';

/** A channel's connection state, as a badge (connected, reconnecting, failed…). */
function ChannelState({ channel }: { channel: ChannelView }) {
  const tone = channel.state === 'connected' ? 'running' : channel.state === 'failed' ? 'failed' : 'suspended';
  return <StateBadge state={channel.state} tone={tone} testId="channel-state" />;
}

/** Channels: each one's state, last message and error; the people waiting for pairing, approved with a button. */
export function ChannelsPage() {
  const channels = useApi(API.channels);
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [note, setNote] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const list = channels.data ?? [];
  const waiting = list.flatMap((channel) => channel.pendingPairings.map((pairing) => ({ channel, pairing })));

  const approve = async (code: string): Promise<void> => {
    setBusy(code);
    setError(undefined);
    try {
      const approved = await approvePairing(code);
      setNote(`${approved.user_name ?? approved.user_id} may now talk on ${approved.channel}.`);
      channels.reload();
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <div class="page">
      <PageHeader
        title="Channels"
        subtitle={
          <span>
            Where people talk to agents: Telegram, Slack, signed webhooks. Configured as <code>[[channels]]</code> in config.toml; see{' '}
            <code>docs/channels.md</code>.
          </span>
        }
      />
      <ErrorBox message={channels.error ?? error} />
      {note === undefined ? null : (
        <p class="small" data-testid="channel-note">
          {note}
        </p>
      )}
      {channels.data === undefined ? null : list.length === 0 ? (
        <Empty>No channels. Add [[channels]] to config.toml and restart the daemon.</Empty>
      ) : (
        <div class="card table-card">
          <table class="table" aria-label="Channels">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Agent</th>
                <th>State</th>
                <th>Last message</th>
                <th>Direct / groups</th>
              </tr>
            </thead>
            <tbody>
              {list.map((channel) => (
                <tr key={channel.name} data-testid="channel">
                  <td class="mono">{channel.name}</td>
                  <td>{channel.kind}</td>
                  <td>
                    <a href={href.agent(channel.agent)}>{channel.agent}</a>
                  </td>
                  <td>
                    <ChannelState channel={channel} />
                    {channel.error === null ? null : (
                      <div class="small muted" data-testid="channel-error">
                        {channel.error}
                      </div>
                    )}
                  </td>
                  <td>{channel.lastMessageAt === null ? '—' : formatTime(Date.parse(channel.lastMessageAt))}</td>
                  <td>
                    {channel.policy.direct} / {channel.policy.groups}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {waiting.length === 0 ? null : (
        <Card title="Waiting for pairing" label="Waiting for pairing">
          <ul class="pairing-list">
            {waiting.map(({ channel, pairing }) => (
              <li key={pairing.code} data-testid="pairing" class="approval-head">
                <span>
                  <span class="strong">{pairing.userName ?? pairing.userId}</span> <span class="muted small">({pairing.userId})</span> on {channel.name}, since{' '}
                  {formatTime(Date.parse(pairing.requestedAt))}, code <span class="mono">{pairing.code}</span>
                </span>
                <button type="button" class="btn btn-primary" disabled={busy !== undefined} onClick={() => void approve(pairing.code)}>
                  Approve
                </button>
              </li>
            ))}
          </ul>
        </Card>
      )}
    </div>
  );
}
