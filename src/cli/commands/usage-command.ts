import type { Command } from 'commander';
import { withBackend } from './agent-commands.ts';
import type { CliIo } from '../cli-io.ts';
import { formatUsage } from '../format.ts';

/** `loom usage`: tokens and cost by agent and model. */
export function registerUsageCommand(program: Command, io: CliIo): void {
  program
    .command('usage')
    .description('show tokens and cost by agent and model (killed agents included, by id)')
    .option('--agent <agent>', 'only this agent (name or id)')
    .option('--json', 'print a JSON array of { agent_id, agent, model, calls, input_tokens, output_tokens, cost_usd }')
    .addHelpText('after', '\nExample:\n  $ loom usage\n  $ loom usage --agent researcher --json\n')
    .action(async (options: { agent?: string; json?: boolean }) => {
      const rows = await withBackend(io, (backend) => backend.usage(options.agent));
      io.stdout(options.json === true ? `${JSON.stringify(rows, null, 2)}\n` : formatUsage(rows));
    });
}
