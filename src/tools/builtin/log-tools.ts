import { z } from 'zod';
import type { LogEntry, LogReader, Tool, ToolContext, ToolResult } from '../../contracts/index.ts';

/**
 * The event-log tools (spec/03 "Event Log Agent"): they read only the daemon's ring of recent
 * log records, newest first, and need no capability beyond being granted themselves.
 */

const LEVELS = ['info', 'warn', 'error', 'fatal'] as const;

function format(entries: readonly LogEntry[], total: number): ToolResult {
  const lines = entries.map((entry) => `${new Date(entry.at).toISOString()} ${entry.level.toUpperCase()} ${entry.category}: ${entry.message}`);
  return {
    text: entries.length === 0 ? `no matching entries (the buffer holds ${total})` : lines.join('\n'),
    structured: {
      count: entries.length,
      entries: entries.map((entry) => ({ at: new Date(entry.at).toISOString(), level: entry.level, category: entry.category, message: entry.message })),
    },
  };
}

function withLogs(context: ToolContext, read: (logs: LogReader) => ToolResult): Promise<ToolResult> {
  if (context.logs === undefined) return Promise.resolve({ text: 'this Loom keeps no log buffer (only the daemon does)', isError: true });
  return Promise.resolve(read(context.logs));
}

const Count = z.int().min(1).max(1000);

function logTool<T>(name: string, description: string, inputSchema: z.ZodType<T>, read: (logs: LogReader, input: T) => ToolResult): Tool<T> {
  return { name, description, inputSchema, requires: () => [], idempotent: true, execute: (input, context) => withLogs(context, (logs) => read(logs, input)) };
}

export const getRecentLogsTool = logTool(
  'get_recent_logs',
  'The most recent log entries of the Loom daemon, newest first.',
  z.strictObject({ count: Count.default(20) }),
  (logs, input) => format(logs.entries().slice(0, input.count), logs.size),
);

export const searchLogsTool = logTool(
  'search_logs',
  'Log entries whose message or category contains the text (case-insensitive), newest first.',
  z.strictObject({ query: z.string().min(1), max_results: Count.default(50) }),
  (logs, input) => {
    const query = input.query.toLowerCase();
    return format(
      logs
        .entries()
        .filter((entry) => entry.message.toLowerCase().includes(query) || entry.category.toLowerCase().includes(query))
        .slice(0, input.max_results),
      logs.size,
    );
  },
);

export const searchLogsByLevelTool = logTool(
  'search_logs_by_level',
  'Log entries of one severity (info, warn, error, fatal), newest first.',
  z.strictObject({ level: z.enum(LEVELS), max_results: Count.default(50) }),
  (logs, input) =>
    format(
      logs
        .entries()
        .filter((entry) => entry.level === input.level)
        .slice(0, input.max_results),
      logs.size,
    ),
);

export const searchLogsByCategoryTool = logTool(
  'search_logs_by_category',
  'Log entries whose category starts with the prefix (e.g. "loom.scheduler"), newest first.',
  z.strictObject({ category_prefix: z.string().min(1), max_results: Count.default(50) }),
  (logs, input) =>
    format(
      logs
        .entries()
        .filter((entry) => entry.category.startsWith(input.category_prefix))
        .slice(0, input.max_results),
      logs.size,
    ),
);

export const searchLogsByTimeRangeTool = logTool(
  'search_logs_by_time_range',
  'Log entries between two ISO 8601 times (inclusive), newest first.',
  z.strictObject({ from: z.iso.datetime({ offset: true }), to: z.iso.datetime({ offset: true }), max_results: Count.default(100) }),
  (logs, input) => {
    const from = Date.parse(input.from);
    const to = Date.parse(input.to);
    return format(
      logs
        .entries()
        .filter((entry) => entry.at >= from && entry.at <= to)
        .slice(0, input.max_results),
      logs.size,
    );
  },
);

export const getLogStatsTool = logTool(
  'get_log_stats',
  'Counts of the buffered log entries: total, per severity, the top 10 categories, and the time span.',
  z.strictObject({}),
  (logs) => {
    const entries = logs.entries();
    const byLevel = Object.fromEntries(LEVELS.map((level) => [level, entries.filter((entry) => entry.level === level).length]));
    const categories = new Map<string, number>();
    for (const entry of entries) categories.set(entry.category, (categories.get(entry.category) ?? 0) + 1);
    const top = [...categories].sort((first, second) => second[1] - first[1] || first[0].localeCompare(second[0])).slice(0, 10);
    const span = entries.length === 0 ? 'empty' : `${new Date(entries.at(-1)?.at ?? 0).toISOString()} to ${new Date(entries[0]?.at ?? 0).toISOString()}`;
    return {
      text: `${entries.length} entries (${LEVELS.map((level) => `${level}: ${byLevel[level]}`).join(', ')}); top categories: ${top.map(([name, count]) => `${name} (${count})`).join(', ') || 'none'}; span: ${span}`,
      structured: { total: entries.length, by_level: byLevel, top_categories: top.map(([category, count]) => ({ category, count })) },
    };
  },
);

export const getLogCountTool = logTool('get_log_count', 'How many log entries the buffer holds.', z.strictObject({}), (logs) => ({
  text: `${logs.size} entries (capacity ${logs.capacity})`,
  structured: { count: logs.size },
}));

/** Every event-log tool: what an event-log agent may use, and only these. */
export const LOG_TOOLS: readonly Tool<never>[] = [
  getRecentLogsTool,
  searchLogsTool,
  searchLogsByLevelTool,
  searchLogsByCategoryTool,
  searchLogsByTimeRangeTool,
  getLogStatsTool,
  getLogCountTool,
] as unknown as readonly Tool<never>[];
