import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api } from '../api.ts';
import { Card, Empty, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatCost, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { useEventVersion } from '../store.ts';
import type { UsageRow } from '../types.ts';

const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 } as const;
type Range = keyof typeof RANGES;
const POINTS = 12;

function total(rows: readonly UsageRow[]): number {
  return rows.reduce((sum, row) => sum + row.cost_usd, 0);
}

/**
 * Cumulative cost at evenly spaced times over `range`: the API adds usage up since a time, so
 * the cost spent by time t is the total minus what was spent since t.
 */
async function costSeries(range: Range, signal: AbortSignal): Promise<[number[], number[]]> {
  const now = Date.now();
  const step = RANGES[range] / POINTS;
  const times = Array.from({ length: POINTS + 1 }, (_, index) => Math.round(now - RANGES[range] + index * step));
  const overall = total(await api<UsageRow[]>('/api/usage', { signal }));
  const since = await Promise.all(times.map((at) => api<UsageRow[]>(`/api/usage?since=${at}`, { signal })));
  return [times.map((at) => at / 1000), since.map((rows) => overall - total(rows))];
}

function CostChart({ range }: { range: Range }) {
  const box = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    let plot: uPlot | undefined;
    costSeries(range, abort.signal).then(
      (data) => {
        if (box.current === null || abort.signal.aborted) return;
        box.current.replaceChildren();
        plot = new uPlot(
          {
            width: box.current.clientWidth || 720,
            height: 240,
            scales: { x: { time: true } },
            axes: [{ stroke: '#64748b', grid: { stroke: '#eef2f7' } }, { stroke: '#64748b', grid: { stroke: '#eef2f7' }, values: (_plot, ticks) => ticks.map((tick) => formatCost(tick)), size: 70 }],
            series: [{}, { label: 'Cost (cumulative)', stroke: '#4f46e5', width: 2, fill: 'rgba(79,70,229,0.08)', value: (_plot, value) => (value === null ? '—' : formatCost(value)) }],
          },
          data,
          box.current,
        );
        setError(undefined);
      },
      (cause: unknown) => {
        if (!abort.signal.aborted) setError(errorText(cause));
      },
    );
    return () => {
      abort.abort();
      plot?.destroy();
    };
  }, [range]);
  return (
    <>
      <ErrorBox message={error} />
      <div ref={box} class="chart" data-testid="cost-chart" />
    </>
  );
}

export function UsagePage() {
  const version = useEventVersion();
  const usage = useApi<UsageRow[]>('/api/usage', [version]);
  const [range, setRange] = useState<Range>('24h');
  const rows = usage.data ?? [];
  const tokens = rows.reduce((sum, row) => sum + row.input_tokens + row.output_tokens, 0);
  const calls = rows.reduce((sum, row) => sum + row.calls, 0);
  return (
    <div class="page">
      <PageHeader title="Usage" subtitle="Tokens and cost by agent and model, since the store began" />
      <ErrorBox message={usage.error} />
      <div class="stats">
        <div class="stat">
          <div class="stat-label">Total cost</div>
          <div class="stat-value mono">{formatCost(total(rows))}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Tokens</div>
          <div class="stat-value mono">{formatTokens(tokens)}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Model calls</div>
          <div class="stat-value mono">{formatTokens(calls)}</div>
        </div>
      </div>
      <Card
        title="Cost over time"
        actions={
          <div class="segmented" role="group" aria-label="Range">
            {(Object.keys(RANGES) as Range[]).map((key) => (
              <button key={key} type="button" class={range === key ? 'on' : ''} onClick={() => setRange(key)}>
                {key}
              </button>
            ))}
          </div>
        }
      >
        <CostChart range={range} />
      </Card>
      <Card title="By agent and model">
        {rows.length === 0 ? (
          <Empty>No model calls yet.</Empty>
        ) : (
          <table class="table" aria-label="Usage">
            <thead>
              <tr>
                <th>Agent</th>
                <th>Model</th>
                <th class="num">Calls</th>
                <th class="num">Input</th>
                <th class="num">Output</th>
                <th class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={`${row.agent_id}-${row.model}`}>
                  <td>{row.agent === null ? <span class="muted mono">{row.agent_id.slice(0, 8)} (killed)</span> : <a href={href.agent(row.agent)}>{row.agent}</a>}</td>
                  <td class="mono">{row.model}</td>
                  <td class="num mono">{formatTokens(row.calls)}</td>
                  <td class="num mono">{formatTokens(row.input_tokens)}</td>
                  <td class="num mono">{formatTokens(row.output_tokens)}</td>
                  <td class="num mono">{formatCost(row.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
