import type { Command } from 'commander';
import { stringify as stringifyToml } from 'smol-toml';
import type { CliIo } from '../cli-io.ts';
import { readManifest } from './agent-commands.ts';

/** `loom manifest check`: validate a manifest and print it normalised. */
export function registerManifestCommands(program: Command, io: CliIo): void {
  const manifest = program
    .command('manifest')
    .description('work with agent manifests')
    .addHelpText('after', '\nExample:\n  $ loom manifest check examples/agents/researcher.toml\n');

  manifest
    .command('check <file>')
    .description('validate a manifest (TOML or JSON; "-" reads standard input) and print it with every default filled in')
    .option('--json', 'print the normalised manifest as JSON')
    .addHelpText(
      'after',
      '\nExit status 0 when valid, 2 when not (the message names the field and what was expected).\n\nExample:\n  $ loom manifest check examples/agents/researcher.toml --json\n',
    )
    .action(async (path: string, options: { json?: boolean }) => {
      const { manifest: normalised, warnings } = await readManifest(path, io);
      for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
      io.stdout(options.json === true ? `${JSON.stringify(normalised, null, 2)}\n` : stringifyToml(normalised) + '\n');
    });
}
