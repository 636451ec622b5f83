import type { Command } from 'commander';
import type { CliIo } from '../cli-io.ts';
import { openHome } from '../cli-context.ts';

/** `loom init`: create the home folder with a commented config. */
export function registerInitCommand(program: Command, io: CliIo): void {
  program
    .command('init')
    .description('create the Loom home folder (LOOM_HOME, default ~/.loom) with a commented config.toml')
    .addHelpText('after', '\nAn existing config.toml is never overwritten.\n\nExample:\n  $ loom init\n  $ LOOM_HOME=./my-loom loom init\n')
    .action(async () => {
      const { home } = await openHome(io);
      io.stdout(`Loom home: ${home.root}\n  config:   ${home.configPath}\n  database: ${home.databasePath}\n`);
    });
}
