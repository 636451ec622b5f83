import type { Command } from 'commander';
import type { UsageRow } from '../../kernel/index.ts';
import { withBackend } from './agent-commands.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTable, formatUsage } from '../format.ts';

const usd = (amount: number): string => `$${amount.toFixed(amount >= 1 ? 2 : 4)}`;

/**
 * `loom usage` as a table, with the input read from and written to the provider's prompt cache
 * when any was: INPUT counts every input token, CACHE READ and CACHE WRITE the cached ones of them.
 */
export function formatUsageWithCache(rows: readonly UsageRow[]): string {
  if (!rows.some((row) => row.cache_read_tokens > 0 || row.cache_write_tokens > 0)) return formatUsage(rows);
  const total = rows.reduce((sum, row) => sum + row.cost_usd, 0);
  return (
    formatTable(
      ['AGENT', 'MODEL', 'CALLS', 'INPUT', 'CACHE READ', 'CACHE WRITE', 'OUTPUT', 'COST'],
      rows.map((row) => [
        row.agent ?? `${row.agent_id} (killed)`,
        row.model,
        String(row.calls),
        String(row.input_tokens),
        String(row.cache_read_tokens),
        String(row.cache_write_tokens),
        String(row.output_tokens),
        usd(row.cost_usd),
      ]),
    ) + `total ${usd(total)}\n`
  );
}

/** `loom usage`: tokens and cost by agent and model. */
export function registerUsageCommand(program: Command, io: CliIo): void {
  program
    .command('usage')
    .description('show tokens and cost by agent and model (killed agents included, by id)')
    .option('--agent <agent>', 'only this agent (name or id)')
    .option('--json', 'print a JSON array of { agent_id, agent, model, calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd }')
    .addHelpText('after', '\nExample:\n  $ loom usage\n  $ loom usage --agent researcher --json\n')
    .action(async (options: { agent?: string; json?: boolean }) => {
      const rows = await withBackend(io, (backend) => backend.usage(options.agent));
      io.stdout(options.json === true ? `${JSON.stringify(rows, null, 2)}\n` : formatUsageWithCache(rows));
    });
}
