import type { ComponentChildren } from 'preact';
import type { AgentState } from './types.ts';

export function StateBadge({ state }: { state: AgentState }) {
  return (
    <span class={`badge badge-${state}`} data-testid="state-badge">
      <span class="badge-dot" />
      {state}
    </span>
  );
}

export function PageHeader({ title, subtitle, actions }: { title: ComponentChildren; subtitle?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle === undefined ? null : <p class="subtitle">{subtitle}</p>}
      </div>
      {actions === undefined ? null : <div class="actions">{actions}</div>}
    </header>
  );
}

export function ErrorBox({ message }: { message: string | undefined }) {
  if (message === undefined) return null;
  return (
    <div class="error-box" role="alert">
      {message}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

export function Card({ title, children, actions }: { title?: ComponentChildren; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      {title === undefined ? null : (
        <div class="card-head">
          <h2>{title}</h2>
          {actions}
        </div>
      )}
      {children}
    </section>
  );
}
