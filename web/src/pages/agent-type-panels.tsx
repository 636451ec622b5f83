import { useState } from 'preact/hooks';
import { API, call } from '../api.ts';
import { Card, Empty, ErrorBox } from '../components.tsx';
import { errorText, formatTime } from '../format.ts';
import { useApi } from '../hooks.ts';

/** A workflow task as `GET /api/agents/{agent}/workflow` shows it. */
interface WorkflowTask {
  id: string;
  title: string;
  agent: string;
  dependsOn: string[];
  status: string;
  attempts: number;
  feedback: string | null;
}

interface Workflow {
  state: string;
  request: string;
  summary: string;
  tasks: WorkflowTask[];
  replans: number;
  note: string | null;
  updatedAt: number;
}

const ACTIONS: Readonly<Record<string, readonly ('approve' | 'pause' | 'resume' | 'cancel')[]>> = {
  awaiting_approval: ['approve', 'cancel'],
  executing: ['pause', 'cancel'],
  paused: ['resume', 'cancel'],
  stalled: ['cancel'],
};

/** A workflow agent's plan with live task states, and its commands as buttons. */
export function WorkflowPanel({ name, version }: { name: string; version: number }) {
  const workflow = useApi<typeof API.workflow, Workflow>(API.workflow, { params: { agent: name } }, [version]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const act = async (action: string): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await call(API.steerWorkflow, { params: { agent: name, action } });
      workflow.reload();
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(false);
    }
  };
  const data = workflow.data;
  return (
    <Card
      title={data === undefined ? 'Workflow' : `Workflow: ${data.state.replace('_', ' ')}`}
      actions={
        <div class="actions">
          {(data === undefined ? [] : (ACTIONS[data.state] ?? [])).map((action) => (
            <button
              key={action}
              type="button"
              class={action === 'cancel' ? 'btn btn-small btn-danger-ghost' : 'btn btn-small'}
              disabled={busy}
              onClick={() => void act(action)}
            >
              {action[0]?.toUpperCase()}
              {action.slice(1)}
            </button>
          ))}
        </div>
      }
    >
      <ErrorBox message={error} />
      {data === undefined ? (
        <Empty>No workflow yet: send this agent a request, then approve its plan here or by saying "go".</Empty>
      ) : (
        <div data-testid="workflow">
          <p>
            {data.summary} <span class="small muted">(for: {data.request})</span>
          </p>
          <table class="table" aria-label="Tasks">
            <thead>
              <tr>
                <th>Task</th>
                <th>Agent</th>
                <th>After</th>
                <th>Status</th>
              </tr>
            </thead>
            <tbody>
              {data.tasks.map((task) => (
                <tr key={task.id} data-task={task.id}>
                  <td>
                    <span class="mono">{task.id}</span> {task.title}
                  </td>
                  <td class="mono">{task.agent}</td>
                  <td class="small">{task.dependsOn.join(', ') || '—'}</td>
                  <td class="small">
                    <span class={`badge badge-${task.status}`}>{task.status}</span>
                    {task.attempts > 1 ? ` ${task.attempts} attempts` : ''}
                    {task.feedback === null || task.status === 'completed' ? null : <div class="muted">{task.feedback}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.note === null ? null : <p class="small">{data.note}</p>}
          <p class="small muted">Updated {formatTime(data.updatedAt)}</p>
        </div>
      )}
    </Card>
  );
}

interface TraceEvent {
  at: number;
  data: { message?: string; trace?: { loop: number; phase: string; content: Record<string, unknown> }[] };
}

/** The last chain of thought of a chain-of-thought agent: each phase, loop by loop. */
export function ThoughtTracePanel({ name, version }: { name: string; version: number }) {
  const traces = useApi<typeof API.audit, TraceEvent[]>(API.audit, { query: { agent: name, type: 'chain-of-thought-finish' } }, [version]);
  const last = traces.data?.at(-1);
  return (
    <Card title="Last chain of thought">
      <ErrorBox message={traces.error} />
      {last === undefined ? (
        <Empty>No thoughts yet: ask this agent something.</Empty>
      ) : (
        <div data-testid="thought-trace">
          <p class="small muted">
            {formatTime(last.at)} · {last.data.message ?? ''}
          </p>
          <ol class="trace">
            {(last.data.trace ?? []).map((thought, index) => (
              <li key={index}>
                <span class="mono">
                  loop {thought.loop + 1} · {thought.phase}
                </span>
                <pre class="code" tabIndex={0} aria-label="Content">
                  {JSON.stringify(thought.content, null, 2)}
                </pre>
              </li>
            ))}
          </ol>
        </div>
      )}
    </Card>
  );
}
