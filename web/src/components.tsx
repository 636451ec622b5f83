import type { ComponentChildren } from 'preact';
import type { AgentView, CannotRunView } from './types.ts';

/**
 * A state as a coloured badge. `tone` picks the colour (`badge-<tone>` in styles.css) when the
 * state has none of its own; `testId` names it for tests (`state-badge` unless given).
 */
export function StateBadge({ state, tone = state, testId = 'state-badge' }: { state: string; tone?: string; testId?: string }) {
  return (
    <span class={`badge badge-${tone}`} data-testid={testId}>
      <span class="badge-dot" />
      {state}
    </span>
  );
}

/** An agent as the state badge reads it. */
type AgentStateOf = Pick<AgentView, 'state' | 'cannot_run'>;

/** Why a running agent cannot run (decision 0041), or null when nothing local stands in its way (or it is not running). */
export function cannotRun(agent: AgentStateOf): CannotRunView | null {
  return agent.state === 'running' ? (agent.cannot_run ?? null) : null;
}

/**
 * An agent's state as a badge: "cannot run" (red, with why and the fix on hover) for a running
 * agent with no model or no key for it, never a green "running".
 */
export function AgentStateBadge({ agent }: { agent: AgentStateOf }) {
  const problem = cannotRun(agent);
  if (problem === null) return <StateBadge state={agent.state} />;
  return (
    <span class="badge badge-failed" data-testid="state-badge" title={`${problem.reason}; ${problem.fix}`}>
      <span class="badge-dot" />
      cannot run
    </span>
  );
}

/** Why an agent cannot run and what to do, as a notice at the top of its pages; nothing when it can. */
export function CannotRunNotice({ agent }: { agent: AgentStateOf & Pick<AgentView, 'name'> }) {
  const problem = cannotRun(agent);
  if (problem === null) return null;
  return (
    <div class="notice" role="status" data-testid="cannot-run">
      <strong>
        {agent.name} cannot run: {problem.reason}.
      </strong>
      <span>To fix it: {problem.fix}.</span>
    </div>
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

/** A card; `label` names its region for assistive technology. */
export function Card({
  title,
  label,
  children,
  actions,
}: {
  title?: ComponentChildren;
  label?: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <section class="card" aria-label={label}>
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

/** A row of buttons of which one is pressed: `options` pairs each value with its button's text. */
export function Segmented<T extends string>({
  label,
  value,
  options,
  onChange,
}: {
  label: string;
  value: T;
  options: readonly (readonly [T, string])[];
  onChange: (value: T) => void;
}) {
  return (
    <div class="segmented" role="group" aria-label={label}>
      {options.map(([key, name]) => (
        <button key={key} type="button" class={value === key ? 'on' : ''} aria-pressed={value === key} onClick={() => onChange(key)}>
          {name}
        </button>
      ))}
    </div>
  );
}

/**
 * Gives every cell of the tables under `root` the name of its column (`data-label`, unless it has
 * one), so a narrow screen can show each row as a card of labelled lines instead of a table
 * wider than the screen (see `.table` in styles.css). Cells spanning columns get none.
 */
function labelTableCells(root: ParentNode): void {
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

/** Whether a node added to the page brings table rows or cells to label: a labelled table, a part of one, or something holding one. */
function bringsTableCells(node: Node): boolean {
  if (!(node instanceof Element)) return false;
  if (node.matches('thead, tbody, tr, th, td')) return node.closest('table.table') !== null;
  return node.matches('table.table') || node.querySelector('table.table') !== null;
}

/**
 * Labels the table cells under `root` now and whenever tables or rows are added to it (see
 * `labelTableCells`); other changes (a streamed chat reply, a ticking countdown) are let be.
 * Returns a function that stops.
 */
export function followTableCells(root: Element): () => void {
  labelTableCells(root);
  const observer = new MutationObserver((records) => {
    if (records.some((record) => [...record.addedNodes].some(bringsTableCells))) labelTableCells(root);
  });
  observer.observe(root, { childList: true, subtree: true });
  return () => observer.disconnect();
}

/** The model an agent runs on: its own, the daemon's default (marked so), or none. */
export function ModelName({ agent }: { agent: Pick<AgentView, 'model' | 'runs_on'> }) {
  if (agent.model !== null) return <>{agent.model}</>;
  if (agent.runs_on === null)
    return (
      <span class="muted" title="no [model] in its manifest and no [default_model] in config.toml">
        none
      </span>
    );
  return (
    <>
      {agent.runs_on} <span class="muted">(default)</span>
    </>
  );
}
