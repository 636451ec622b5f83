import { useEffect, useState } from 'preact/hooks';
import { API, apiKey, setApiKey } from './api.ts';
import { useApi } from './hooks.ts';
import { AgentPage } from './pages/agent-page.tsx';
import { AgentsPage } from './pages/agents-page.tsx';
import { ApprovalsPage, usePendingApprovals } from './pages/approvals-page.tsx';
import { followTableCells } from './components.tsx';
import { ChatPage } from './pages/chat-page.tsx';
import { EventsPage } from './pages/events-page.tsx';
import { ChannelsPage } from './pages/channels-page.tsx';
import { ForgedToolsPage } from './pages/forged-tools-page.tsx';
import { PackagesPage } from './pages/packages-page.tsx';
import { UsagePage } from './pages/usage-page.tsx';
import { href, type Route, titleOf, useRoute } from './router.ts';
import { useEventLog } from './store.ts';

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'agents':
      return <AgentsPage />;
    case 'agent':
      return <AgentPage name={route.agent} />;
    case 'chat':
      // Keyed by agent: a conversation on screen (a refused message, a live turn) belongs to its agent only.
      return <ChatPage key={route.agent} name={route.agent} />;
    case 'events':
      return <EventsPage />;
    case 'usage':
      return <UsagePage />;
    case 'approvals':
      return <ApprovalsPage />;
    case 'packages':
      return <PackagesPage />;
    case 'channels':
      return <ChannelsPage />;
    case 'tools':
      return <ForgedToolsPage />;
    case 'not-found':
      return (
        <div class="empty">
          Nothing lives at <code>{route.path}</code>. <a href={href.agents}>Back to the agents</a>.
        </div>
      );
  }
}

function NavLink({ to, active, label, icon, count }: { to: string; active: boolean; label: string; icon: string; count?: number | undefined }) {
  return (
    <a href={to} class={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
      <span class="nav-icon" aria-hidden="true">
        {icon}
      </span>
      {label}
      {count === undefined || count === 0 ? null : (
        <span class="nav-count" data-testid="pending-approvals" title={`${count} pending`}>
          {count}
        </span>
      )}
    </a>
  );
}

function KeyForm() {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState(apiKey());
  if (!open) {
    return (
      <button type="button" class="link-button" onClick={() => setOpen(true)}>
        {apiKey() === '' ? 'Set API key' : 'API key set · change'}
      </button>
    );
  }
  return (
    <form
      class="key-form"
      onSubmit={(event) => {
        event.preventDefault();
        setApiKey(value.trim());
        window.location.reload();
      }}
    >
      <input
        type="password"
        aria-label="API key"
        placeholder="API key (empty for none)"
        value={value}
        onInput={(event) => setValue(event.currentTarget.value)}
      />
      <button type="submit" class="btn btn-small">
        Save
      </button>
    </form>
  );
}

export function App() {
  const route = useRoute();
  const { state } = useEventLog();
  // Asked again whenever the live events drop or come back: the daemon gone is said, not its old version.
  const health = useApi(API.health, {}, [state]);
  const pending = usePendingApprovals();
  const section = route.page === 'agent' || route.page === 'chat' ? 'agents' : route.page;
  // One place names every page, so the browser's tab and history say where one is.
  useEffect(() => {
    document.title = titleOf(route);
  }, [route]);
  // Every page's tables name their columns on each cell, for the stacked layout of narrow screens.
  useEffect(() => {
    const main = document.querySelector('main');
    return main === null ? undefined : followTableCells(main);
  }, []);
  return (
    <div class="layout">
      <aside class="sidebar">
        <a class="brand" href={href.agents}>
          <span class="brand-mark">L</span>
          <span>Loom</span>
        </a>
        <nav aria-label="Main">
          <NavLink to={href.agents} active={section === 'agents'} label="Agents" icon="◎" />
          <NavLink to={href.packages} active={section === 'packages'} label="Packages" icon="▦" />
          <NavLink to={href.tools} active={section === 'tools'} label="Tools" icon="⚒" />
          <NavLink to={href.channels} active={section === 'channels'} label="Channels" icon="☏" />
          <NavLink to={href.events} active={section === 'events'} label="Events" icon="≋" />
          <NavLink to={href.usage} active={section === 'usage'} label="Usage" icon="◔" />
          <NavLink to={href.approvals} active={section === 'approvals'} label="Approvals" icon="✓" count={pending.data?.length} />
        </nav>
        <div class="sidebar-foot">
          <div class="daemon-status" title={`live events: ${state}`} data-testid="daemon-status">
            <span class={`status-dot status-${health.error === undefined && state === 'open' ? 'ok' : health.error === undefined ? 'wait' : 'down'}`} />
            {health.error === undefined ? (health.data === undefined ? 'connecting…' : `daemon ${health.data.version}`) : 'daemon unreachable'}
          </div>
          <KeyForm />
        </div>
      </aside>
      <main class="content">
        <Page route={route} />
      </main>
    </div>
  );
}
