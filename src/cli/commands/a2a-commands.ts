import type { Command } from 'commander';
import { ExternalAgentRegistry, listExternalAgents } from '../../a2a/external-agents.ts';
import { UsageError } from '../../errors/index.ts';
import { createSilentLogger } from '../../logging/index.ts';
import { callDaemon, staleDaemonNote } from '../backend.ts';
import { API } from '../../wire/index.ts';
import { formatTable } from '../format.ts';
import { openHome } from '../cli-context.ts';
import { type CliIo, EXIT, ExitStatus } from '../cli-io.ts';

// Every command module loads with `loom start`: the A2A client (and its SDK) loads when a command uses it.
const loadClient = () => import('../../a2a/a2a-client.ts');

function isUrl(text: string): boolean {
  return /^https?:\/\//i.test(text);
}

/** `loom a2a discover|send|list`: Loom's A2A client from the command line. */
export function registerA2aCommands(program: Command, io: CliIo): void {
  const a2a = program
    .command('a2a')
    .description('call agents of other frameworks over A2A (and list the configured ones)')
    .addHelpText(
      'after',
      '\nExternal agents are named as [[a2a.external_agents]] (name, url) in config.toml; a URL works everywhere too.\n\nExample:\n  $ loom a2a discover https://research.example.com\n  $ loom a2a send research-agent "Summarize today\'s arXiv papers on agents"\n  $ loom a2a list\n',
    );

  a2a
    .command('discover <url>')
    .description("fetch and print an A2A agent's card")
    .option('--json', 'print the card as JSON')
    .addHelpText('after', '\nExample:\n  $ loom a2a discover https://research.example.com\n')
    .action(async (url: string, options: { json?: boolean }) => {
      if (!isUrl(url)) throw new UsageError(`"${url}" is not an http(s) URL`);
      const { discoverAgent } = await loadClient();
      const card = await discoverAgent(url);
      if (options.json === true) {
        io.stdout(`${JSON.stringify(card, null, 2)}\n`);
        return;
      }
      const lines = [
        `${card.name} ${card.version}`,
        card.description,
        `streaming: ${card.capabilities?.streaming === true ? 'yes' : 'no'}`,
        'interfaces:',
        ...card.supportedInterfaces.map((entry) => `  ${entry.protocolBinding} ${entry.protocolVersion} ${entry.url}`),
        `skills: ${card.skills.length === 0 ? 'none' : card.skills.map((skill) => skill.id).join(', ')}`,
      ];
      io.stdout(`${lines.join('\n')}\n`);
    });

  a2a
    .command('send <target> <message>')
    .description('send a task to an A2A agent (a URL, or the name of an [[a2a.external_agents]] entry) and print the reply')
    .option('--json', 'print { task_id, state, text }')
    .addHelpText(
      'after',
      '\nExample:\n  $ loom a2a send research-agent "Summarize today\'s arXiv papers on agents"\n  $ loom a2a send http://127.0.0.1:4200/a2a/researcher "Hello"\n',
    )
    .action(async (target: string, message: string, options: { json?: boolean }) => {
      let url = target;
      if (!isUrl(target)) {
        const { config } = await openHome(io);
        const entry = config.a2a.external_agents.find((agent) => agent.name === target);
        if (entry === undefined) {
          const known = config.a2a.external_agents.map((agent) => agent.name);
          throw new UsageError(
            `no external agent named "${target}" in [[a2a.external_agents]] (configured: ${known.length === 0 ? 'none' : known.join(', ')}); give a URL instead`,
          );
        }
        url = entry.url;
      }
      const { discoverAgent, sendA2aMessage } = await loadClient();
      const card = await discoverAgent(url);
      const result = await sendA2aMessage(card, message);
      io.stdout(
        options.json === true ? `${JSON.stringify({ task_id: result.taskId, state: result.state, text: result.text }, null, 2)}\n` : `${result.text}\n`,
      );
      // The reply was printed; a task that did not complete is a failure (exit status 1), as docs/cli.md's table says.
      if (result.state === 'failed' || result.state === 'rejected' || result.state === 'canceled') throw new ExitStatus(EXIT.failure);
    });

  a2a
    .command('list')
    .description('show the external agents of [[a2a.external_agents]]: as the running daemon discovered them, else discovered now')
    .option('--json', 'print { agents, total } as GET /api/a2a/external does')
    .addHelpText('after', '\nExample:\n  $ loom a2a list\n  $ loom a2a list --json\n')
    .action(async (options: { json?: boolean }) => {
      const { home, config } = await openHome(io);
      let listing = (await callDaemon<typeof API.externalAgents, ReturnType<typeof listExternalAgents>>(home, io.env, API.externalAgents))?.answer;
      if (listing === undefined) {
        const registry = new ExternalAgentRegistry();
        registry.configure(config.a2a.external_agents);
        await registry.discoverAll(createSilentLogger());
        listing = listExternalAgents(registry);
      }
      if (options.json === true) {
        io.stdout(`${JSON.stringify(listing, null, 2)}\n`);
        return;
      }
      if (listing.total === 0) {
        // A daemon started before the entries were added lists none of them.
        io.stdout('no external agents: add [[a2a.external_agents]] entries (name, url) to config.toml\n');
        const stale = await staleDaemonNote(io);
        if (stale !== undefined) io.stderr(`${stale}\n`);
        return;
      }
      io.stdout(
        formatTable(
          ['NAME', 'STATUS', 'URL', 'SKILLS'],
          listing.agents.map((agent) => [agent.name, agent.status, agent.url, agent.status === 'failed' ? (agent.error ?? '') : agent.skills.join(', ')]),
        ),
      );
    });
}
