import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { LoomError } from '../../errors/index.ts';
import { type Kernel, toTurnView } from '../../kernel/index.ts';
import type { AgentEvent } from '../../runtime/index.ts';
import { openCliContext } from '../cli-context.ts';
import type { CliIo } from '../cli-io.ts';
import { formatTurnFooter, formatToolLine } from '../format.ts';

/** Renders a streamed run on the terminal: text as it comes, one line per tool call and result. */
async function renderStream(io: CliIo, events: AsyncIterable<AgentEvent>): Promise<Extract<AgentEvent, { type: 'run-finish' }> | undefined> {
  let finish: Extract<AgentEvent, { type: 'run-finish' }> | undefined;
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

/** `loom send` and `loom chat`. */
export function registerSendCommands(program: Command, io: CliIo): void {
  program
    .command('send <agent> <message>')
    .description('send a message to an agent and print its reply')
    .option('--json', 'print { text, usage: { input_tokens, output_tokens }, iterations, cost_usd, model }')
    .option('--stream', 'print the reply as it arrives, with a line per tool call and result')
    .addHelpText('after', '\nExample:\n  $ loom send researcher "What is the capital of Norway?"\n  $ loom send researcher "Summarise notes.txt" --stream\n')
    .action(async (reference: string, message: string, options: { json?: boolean; stream?: boolean }) => {
      const context = await openCliContext(io);
      try {
        if (options.stream === true && options.json !== true) {
          const finish = await renderStream(io, context.kernel.stream(reference, message));
          if (finish !== undefined) io.stderr(`${formatTurnFooter(finish.result)}\n`);
          return;
        }
        const result = await context.kernel.send(reference, message);
        io.stdout(options.json === true ? `${JSON.stringify(toTurnView(result), null, 2)}\n` : `${result.text}\n`);
      } finally {
        await context.close();
      }
    });

  program
    .command('chat <agent>')
    .description('talk with an agent: replies stream as they arrive, tool calls show on their own lines, usage after each reply')
    .addHelpText('after', '\nType /exit or press Ctrl-D to leave.\n\nExample:\n  $ loom chat researcher\n')
    .action(async (reference: string) => {
      const context = await openCliContext(io);
      const kernel: Kernel = context.kernel;
      const prompt = createInterface({ input: io.stdin, terminal: false });
      try {
        const name = kernel.get(reference).name;
        io.stdout(`Chatting with ${name}. Type /exit or press Ctrl-D to leave.\n`);
        for await (const input of prompt) {
          const message = input.trim();
          if (message === '') continue;
          if (message === '/exit' || message === '/quit') break;
          io.stdout(`${name}> `);
          try {
            const finish = await renderStream(io, kernel.stream(reference, message));
            if (finish !== undefined) io.stdout(`${formatTurnFooter(finish.result)}\n`);
          } catch (error) {
            // A failed turn is reported and the conversation goes on.
            io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
          }
        }
      } finally {
        prompt.close();
        await context.close();
      }
    });
}
