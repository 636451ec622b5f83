import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { LoomError, UsageError } from '../../errors/index.ts';
import type { CliEvent } from '../backend.ts';
import { withBackend } from './agent-commands.ts';
import { type CliIo, readAll } from '../cli-io.ts';
import { formatToolLine, formatTurnFooter, formatUsage } from '../format.ts';

/** Renders a streamed run on the terminal: text as it comes, one line per tool call and result. */
async function renderStream(io: CliIo, events: AsyncIterable<CliEvent>): Promise<Extract<CliEvent, { type: 'run-finish' }> | undefined> {
  let finish: Extract<CliEvent, { type: 'run-finish' }> | undefined;
  let midLine = false;
  const line = (text: string): void => {
    io.stdout(`${midLine ? '\n' : ''}${text}\n`);
    midLine = false;
  };
  for await (const event of events) {
    switch (event.type) {
      case 'text-delta':
        io.stdout(event.text);
        midLine = !event.text.endsWith('\n');
        break;
      case 'tool-call':
      case 'tool-result':
        line(formatToolLine(event));
        break;
      case 'approval-request':
        line(`  ⏸ ${event.toolName} waits for approval until ${event.expiresAt}: loom approvals approve ${event.approvalId} (or deny)`);
        break;
      case 'run-finish':
        finish = event;
        break;
      case 'error':
        if (midLine) io.stdout('\n');
        throw new LoomError(event.code, event.category, event.message);
      case 'run-start':
      case 'phase':
        break;
    }
  }
  if (midLine) io.stdout('\n');
  return finish;
}

/** What `loom chat` takes besides messages. */
const CHAT_HELP = 'Commands: /help this list, /reset empty the session, /usage tokens and cost so far, /exit leave (or Ctrl-D).';

/** `loom send` and `loom chat`. */
export function registerSendCommands(program: Command, io: CliIo): void {
  program
    .command('send <agent> <message>')
    .description('send a message to an agent and print its reply')
    .option('--json', 'print { text, usage: { input_tokens, output_tokens }, iterations, cost_usd, model }')
    .option('--stream', 'print the reply as it arrives, with a line per tool call and result')
    .addHelpText('after', '\nWith - as the message, it is read from standard input.\n\nExample:\n  $ loom send researcher "What is the capital of Norway?"\n  $ loom send researcher "Summarise notes.txt" --stream\n  $ git diff | loom send reviewer -\n')
    .action(async (reference: string, text: string, options: { json?: boolean; stream?: boolean }) => {
      const message = text === '-' ? (await readAll(io.stdin)).trim() : text;
      if (message === '') throw new UsageError(text === '-' ? 'standard input was empty: there is no message to send' : 'the message is empty');
      await withBackend(io, async (backend) => {
        if (options.stream === true && options.json !== true) {
          const finish = await renderStream(io, backend.stream(reference, message));
          if (finish !== undefined) io.stderr(`${formatTurnFooter(finish.result)}\n`);
          return;
        }
        const turn = await backend.send(reference, message);
        io.stdout(options.json === true ? `${JSON.stringify(turn, null, 2)}\n` : `${turn.text}\n`);
      });
    });

  program
    .command('chat <agent>')
    .description('talk with an agent: replies stream as they arrive, tool calls show on their own lines, usage after each reply')
    .addHelpText('after', `\n${CHAT_HELP}\n\nExample:\n  $ loom chat researcher\n`)
    .action(async (reference: string) => {
      await withBackend(io, async (backend) => {
        const name = (await backend.get(reference)).name;
        // At a terminal: line editing and history (arrow keys), as in any shell.
        const terminal = io.interactive === true;
        const prompt = createInterface({ input: io.stdin, terminal, ...(terminal ? { output: process.stdout, historySize: 500 } : {}) });
        try {
          io.stdout(`Chatting with ${name}. Type /help for commands, /exit or Ctrl-D to leave.\n`);
          for await (const input of prompt) {
            const message = input.trim();
            if (message === '') continue;
            if (message === '/exit' || message === '/quit') break;
            if (message === '/help') {
              io.stdout(`${CHAT_HELP}\n`);
              continue;
            }
            if (message === '/reset') {
              await backend.resetSession(reference);
              io.stdout(`The session of ${name} is empty now.\n`);
              continue;
            }
            if (message === '/usage') {
              const rows = await backend.usage(name);
              io.stdout(rows.length === 0 ? 'No usage yet.\n' : formatUsage(rows));
              continue;
            }
            if (message.startsWith('/')) {
              io.stderr(`unknown command ${message.split(/\s/)[0] ?? message}; ${CHAT_HELP}\n`);
              continue;
            }
            io.stdout(`${name}> `);
            try {
              const finish = await renderStream(io, backend.stream(reference, message));
              if (finish !== undefined) io.stdout(`${formatTurnFooter(finish.result)}\n`);
            } catch (error) {
              // A failed turn is reported and the conversation goes on.
              io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
            }
          }
        } finally {
          prompt.close();
        }
      });
    });
}
