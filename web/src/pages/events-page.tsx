import { useState } from 'preact/hooks';
import { Empty, PageHeader } from '../components.tsx';
import { formatTime } from '../format.ts';
import { href } from '../router.ts';
import { useEventLog } from '../store.ts';
import type { KernelEvent } from '../types.ts';

function details(event: KernelEvent): string {
  const { type: _type, at: _at, agentId: _agentId, name: _name, ...rest } = event;
  return Object.keys(rest).length === 0 ? '' : JSON.stringify(rest);
}

export function EventsPage() {
  const { events, state } = useEventLog();
  const [filter, setFilter] = useState('');
  const shown = filter === '' ? events : events.filter((event) => event.type.includes(filter) || event.name.includes(filter));
  return (
    <div class="page">
      <PageHeader
        title="Events"
        subtitle={
          <span>
            <span class={`status-dot status-${state === 'open' ? 'ok' : state === 'connecting' ? 'wait' : 'down'}`} /> {state === 'open' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Disconnected, retrying'} · what the kernel did since this page was opened
          </span>
        }
        actions={<input class="search" type="search" placeholder="Filter by type or agent" value={filter} onInput={(event) => setFilter(event.currentTarget.value)} />}
      />
      {shown.length === 0 ? (
        <Empty>No events yet. Spawning, suspending, resuming or killing an agent shows up here as it happens.</Empty>
      ) : (
        <div class="card table-card">
          <table class="table" aria-label="Events">
            <thead>
              <tr>
                <th>Time</th>
                <th>Event</th>
                <th>Agent</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((event, index) => (
                <tr key={`${event.at}-${index}`} class="event-row">
                  <td class="mono small nowrap">{formatTime(event.at)}</td>
                  <td>
                    <span class={`event-type event-${event.type}`}>{event.type}</span>
                  </td>
                  <td>
                    <a href={href.agent(event.name)}>{event.name}</a>
                  </td>
                  <td class="mono small muted">{details(event)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
