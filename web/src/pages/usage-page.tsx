import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { API } from '../api.ts';
import { Card, Empty, ErrorBox, PageHeader, Segmented } from '../components.tsx';
import { formatCost, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { useEventVersion } from '../store.ts';
import type { UsageBucketView, UsageRow, UsageSeriesView } from '../types.ts';

const RANGES = ['1h', '24h', '7d', '30d'] as const;
type Range = (typeof RANGES)[number];
type Metric = 'cost' | 'tokens';
type Group = 'model' | 'agent';

/** Line colours of the series, distinguishable in light and dark themes. */
const PALETTE = ['#6366f1', '#0ea5e9', '#f59e0b', '#10b981', '#ef4444', '#a855f7', '#14b8a6', '#f97316', '#64748b', '#ec4899'];

/** `1.2k`, `3.4M`: token counts short enough for an axis. */
function compactTokens(count: number): string {
  if (Math.abs(count) >= 1_000_000) return `${Number((count / 1_000_000).toFixed(1))}M`;
  if (Math.abs(count) >= 1_000) return `${Number((count / 1_000).toFixed(1))}k`;
  return String(Math.round(count));
}

/** A cost on an axis: as many decimals as the step between ticks needs, never fewer than two. */
function axisCost(value: number, step: number): string {
  const decimals = Math.min(6, Math.max(2, Math.ceil(-Math.log10(step || 1))));
  return `$${value.toFixed(decimals)}`;
}

function sum<T>(rows: readonly T[], value: (row: T) => number): number {
  return rows.reduce((total, row) => total + value(row), 0);
}

/** The agent a usage row is of: its name, or the start of its id once it was killed. */
function agentLabel(row: UsageRow): string {
  return row.agent ?? `${row.agent_id.slice(0, 8)} (killed)`;
}

function groupKey(bucket: UsageBucketView, group: Group): string {
  return group === 'model' ? bucket.model : agentLabel(bucket);
}

/** A series per model (or agent) over every bucket of the range, empty buckets at zero. */
function toSeries(view: UsageSeriesView, metric: Metric, group: Group): { times: number[]; series: { label: string; values: number[] }[] } {
  const times: number[] = [];
  for (let start = view.since; start < view.until; start += view.step_ms) times.push(start);
  const index = new Map(times.map((start, position) => [start, position]));
  const byKey = new Map<string, number[]>();
  for (const bucket of view.buckets) {
    const key = groupKey(bucket, group);
    let values = byKey.get(key);
    if (values === undefined) {
      values = times.map(() => 0);
      byKey.set(key, values);
    }
    const position = index.get(bucket.start);
    if (position !== undefined) values[position] = (values[position] ?? 0) + (metric === 'cost' ? bucket.cost_usd : bucket.input_tokens + bucket.output_tokens);
  }
  const series = [...byKey.entries()].map(([label, values]) => ({ label, values })).sort((a, b) => sum(b.values, (v) => v) - sum(a.values, (v) => v));
  return { times, series };
}

/** The current theme's colour for `name` (a CSS custom property), for the canvas. */
function cssColor(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value === '' ? fallback : value;
}

/** Re-renders when the system switches between light and dark. */
function useColorScheme(): boolean {
  const query = typeof window.matchMedia === 'function' ? window.matchMedia('(prefers-color-scheme: dark)') : undefined;
  const [dark, setDark] = useState(query?.matches ?? false);
  useEffect(() => {
    if (query === undefined) return undefined;
    const onChange = (event: MediaQueryListEvent): void => setDark(event.matches);
    query.addEventListener('change', onChange);
    return () => query.removeEventListener('change', onChange);
  }, []);
  return dark;
}

function UsageChart({ view, metric, group }: { view: UsageSeriesView; metric: Metric; group: Group }) {
  const box = useRef<HTMLDivElement>(null);
  const dark = useColorScheme();
  const { times, series } = useMemo(() => toSeries(view, metric, group), [view, metric, group]);
  const labels = series.map((entry) => entry.label);
  const largest = Math.max(0, ...series.flatMap((entry) => entry.values));
  // The y axis runs from zero to a tenth above the largest bucket, so the data fills the chart.
  const yMax = largest === 0 ? (metric === 'cost' ? 0.01 : 10) : largest * 1.1;
  useEffect(() => {
    const element = box.current;
    if (element === null || series.length === 0) return undefined;
    const axisColor = cssColor('--muted', '#5b6275');
    const gridColor = cssColor('--line', '#e5e7ef');
    const format = (value: number): string => (metric === 'cost' ? formatCost(value) : formatTokens(value));
    const plot = new uPlot(
      {
        width: Math.max(240, element.clientWidth),
        height: 260,
        scales: {
          // The whole range, even where nothing was used; the y axis from zero to just above the largest bucket.
          x: { time: true, range: () => [view.since / 1000, view.until / 1000] },
          y: { range: () => [0, yMax] },
        },
        axes: [
          { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } },
          {
            stroke: axisColor,
            grid: { stroke: gridColor, width: 1 },
            ticks: { stroke: gridColor },
            size: metric === 'cost' ? 72 : 56,
            values: (_plot, ticks) => {
              const step = ticks.length > 1 ? (ticks[1] ?? 0) - (ticks[0] ?? 0) : (ticks[0] ?? 1);
              return ticks.map((tick) => (metric === 'cost' ? axisCost(tick, step) : compactTokens(tick)));
            },
          },
        ],
        series: [
          { label: 'Time' },
          ...series.map((entry, position) => ({
            label: entry.label,
            stroke: PALETTE[position % PALETTE.length] ?? '#6366f1',
            width: 2,
            points: { show: true, size: 5 },
            value: (_plot: uPlot, value: number | null) => (value === null ? '—' : format(value)),
          })),
        ],
        legend: { show: true, live: false },
      },
      [times.map((start) => start / 1000), ...series.map((entry) => entry.values)],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, element.clientWidth), height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [view, metric, group, dark]);
  if (series.length === 0) return <Empty>No model calls in this range.</Empty>;
  const what = metric === 'cost' ? 'Cost' : 'Tokens';
  return (
    <div
      ref={box}
      class="chart"
      data-testid="cost-chart"
      data-series={labels.join('\n')}
      data-from={view.since}
      data-to={view.until}
      data-largest={largest}
      data-y-max={yMax}
      role="img"
      aria-label={`${what} per ${group} over time: ${series.map((entry) => `${entry.label} ${metric === 'cost' ? formatCost(sum(entry.values, (v) => v)) : formatTokens(sum(entry.values, (v) => v))}`).join(', ')}`}
    />
  );
}

/** Usage added up under a key: calls, tokens in (of them, read from and written to the prompt cache) and out, and cost. */
interface Totals {
  key: string;
  calls: number;
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  cost: number;
}

/** Usage rows added up by one field (the model or the agent). */
function totalsBy(rows: readonly UsageRow[], key: (row: UsageRow) => string): Totals[] {
  const totals = new Map<string, Totals>();
  for (const row of rows) {
    const name = key(row);
    const total = totals.get(name) ?? { key: name, calls: 0, input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 };
    total.calls += row.calls;
    total.input += row.input_tokens;
    total.cacheRead += row.cache_read_tokens;
    total.cacheWrite += row.cache_write_tokens;
    total.output += row.output_tokens;
    total.cost += row.cost_usd;
    totals.set(name, total);
  }
  return [...totals.values()].sort((a, b) => b.cost - a.cost || b.input + b.output - (a.input + a.output));
}

/** A column that says what a row of a totals table is (the model, the agent). */
interface KeyColumn<T> {
  head: string;
  class?: string;
  cell: (row: T) => ComponentChildren;
}

/** Rows of usage: the columns that say what each is, then its calls, tokens in (and of them, cached) and out, and cost. */
function TotalsTable<T extends Totals>({ label, keys, rows }: { label: string; keys: readonly KeyColumn<T>[]; rows: readonly T[] }) {
  return (
    <table class="table" aria-label={label}>
      <thead>
        <tr>
          {keys.map((column) => (
            <th key={column.head} scope="col">
              {column.head}
            </th>
          ))}
          <th scope="col" class="num">
            Calls
          </th>
          <th scope="col" class="num">
            Input
          </th>
          <th scope="col" class="num" title="Input tokens read from the prompt cache">
            Cache read
          </th>
          <th scope="col" class="num" title="Input tokens written to the prompt cache">
            Cache write
          </th>
          <th scope="col" class="num">
            Output
          </th>
          <th scope="col" class="num">
            Cost
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.key}>
            {keys.map((column) => (
              <td key={column.head} class={column.class}>
                {column.cell(row)}
              </td>
            ))}
            <td class="num mono">{formatTokens(row.calls)}</td>
            <td class="num mono">{formatTokens(row.input)}</td>
            <td class="num mono">{formatTokens(row.cacheRead)}</td>
            <td class="num mono">{formatTokens(row.cacheWrite)}</td>
            <td class="num mono">{formatTokens(row.output)}</td>
            <td class="num mono">{formatCost(row.cost)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Tokens and cost: totals, a chart over a range of the daemon's clock per model or agent, and tables by model, by agent and by both. */
export function UsagePage() {
  const version = useEventVersion();
  const usage = useApi(API.usage, {}, [version]);
  const [range, setRange] = useState<Range>('24h');
  const [metric, setMetric] = useState<Metric>('cost');
  const [group, setGroup] = useState<Group>('model');
  const series = useApi(API.usageSeries, { query: { range } }, [version]);
  const rows = usage.data ?? [];
  const tokens = sum(rows, (row) => row.input_tokens + row.output_tokens);
  const calls = sum(rows, (row) => row.calls);
  return (
    <div class="page">
      <PageHeader title="Usage" subtitle="Tokens and cost by model and agent, since the store began" />
      <ErrorBox message={usage.error} />
      <div class="stats">
        <div class="stat">
          <div class="stat-label">Total cost</div>
          <div class="stat-value mono">{formatCost(sum(rows, (row) => row.cost_usd))}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Tokens</div>
          <div class="stat-value mono">{formatTokens(tokens)}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Cache read</div>
          <div class="stat-value mono" title="Input tokens read from the prompt cache">
            {formatTokens(sum(rows, (row) => row.cache_read_tokens))}
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Model calls</div>
          <div class="stat-value mono">{formatTokens(calls)}</div>
        </div>
      </div>
      <Card
        title={`${metric === 'cost' ? 'Cost' : 'Tokens'} over time, per ${group}`}
        actions={
          <div class="chart-controls">
            <Segmented
              label="Measure"
              value={metric}
              options={[
                ['cost', 'Cost'],
                ['tokens', 'Tokens'],
              ]}
              onChange={setMetric}
            />
            <Segmented
              label="Series"
              value={group}
              options={[
                ['model', 'Per model'],
                ['agent', 'Per agent'],
              ]}
              onChange={setGroup}
            />
            <Segmented label="Range" value={range} options={RANGES.map((key) => [key, key] as const)} onChange={setRange} />
          </div>
        }
      >
        <ErrorBox message={series.error} />
        {series.data === undefined ? null : <UsageChart view={series.data} metric={metric} group={group} />}
      </Card>
      {rows.length === 0 ? (
        <Empty>No model calls yet.</Empty>
      ) : (
        <>
          <Card title="By model">
            <TotalsTable
              label="Usage by model"
              keys={[{ head: 'Model', class: 'mono', cell: (total) => total.key }]}
              rows={totalsBy(rows, (row) => row.model)}
            />
          </Card>
          <Card title="By agent">
            <TotalsTable
              label="Usage by agent"
              keys={[
                {
                  head: 'Agent',
                  class: 'mono',
                  cell: (total) => (rows.some((row) => row.agent === total.key) ? <a href={href.agent(total.key)}>{total.key}</a> : total.key),
                },
              ]}
              rows={totalsBy(rows, agentLabel)}
            />
          </Card>
          <Card title="By agent and model">
            <TotalsTable
              label="Usage"
              keys={[
                {
                  head: 'Agent',
                  cell: ({ row }) => (row.agent === null ? <span class="muted mono">{agentLabel(row)}</span> : <a href={href.agent(row.agent)}>{row.agent}</a>),
                },
                { head: 'Model', class: 'mono', cell: ({ row }) => row.model },
              ]}
              rows={rows.map((row) => ({
                key: `${row.agent_id}-${row.model}`,
                calls: row.calls,
                input: row.input_tokens,
                cacheRead: row.cache_read_tokens,
                cacheWrite: row.cache_write_tokens,
                output: row.output_tokens,
                cost: row.cost_usd,
                row,
              }))}
            />
          </Card>
        </>
      )}
    </div>
  );
}
