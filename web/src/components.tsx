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

/**
 * Gives every cell of the tables under `root` the name of its column (`data-label`, unless it has
 * one), so a narrow screen can show each row as a card of labelled lines instead of a table
 * wider than the screen (see `.table` in styles.css). Cells spanning columns get none.
 */
export function labelTableCells(root: ParentNode): void {
  for (const table of root.querySelectorAll('table.table')) {
    const heads = [...table.querySelectorAll('thead tr:first-child th')].map((th) => th.textContent.trim());
    if (heads.length === 0) continue;
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((cell, index) => {
        const head = heads[index];
        if (cell.hasAttribute('data-label') || (cell as HTMLTableCellElement).colSpan > 1 || head === undefined || head === '') return;
        cell.setAttribute('data-label', head);
      });
    }
  }
}
