import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import type { Command } from 'commander';
import { isLoomError, LoomError, UsageError } from '../../errors/index.ts';
import type { CliBackend, CliEvent } from '../backend.ts';
import { withBackend } from './agent-commands.ts';
import { type CliIo, EXIT, ExitStatus, readAll } from '../cli-io.ts';
import { formatToolLine, formatTurnFooter, formatUsage } from '../format.ts';

/** Renders a streamed run on the terminal: text as it comes, one line per tool call and result. */
async function renderStream(io: CliIo, events: AsyncIterable<CliEvent>): Promise<Extract<CliEvent, { type: 'run-finish' }> | undefined> {
  let finish: Extract<CliEvent, { type: 'run-finish' }> | undefined;
  let midLine = false;
  // Whether any text streamed: an agent loop streams its answer as it comes.
  let streamed = false;
  const line = (text: string): void => {
    io.stdout(`${midLine ? '\n' : ''}${text}\n`);
    midLine = false;
  };
  try {
    for await (const event of events) {
      switch (event.type) {
        case 'text-delta':
          io.stdout(event.text);
          midLine = !event.text.endsWith('\n');
          if (event.text.trim() !== '') streamed = true;
          break;
        case 'tool-call':
        case 'tool-result':
          line(formatToolLine(event));
          break;
        case 'approval-request':
          line(
            `  ⏸ ${event.toolName} waits for approval until ${event.expiresAt}: loom approvals approve ${event.approvalId} (or deny)${event.reason === undefined ? '' : `; ${event.reason}`}`,
          );
          break;
        case 'phase':
          // The steps of an orchestrating agent ("Selecting the best agent…"), a fallback, a compaction;
          // not each model call, nor a continuation (it goes on with the text mid-sentence).
          if (event.phase !== 'model-call' && event.phase !== 'continuation') line(`  · ${event.detail}`);
          break;
        case 'run-finish':
          finish = event;
          break;
        case 'error':
          throw new LoomError(event.code, event.category, event.message);
        case 'notice':
          line(`  ⟳ ${event.text}`);
          break;
        case 'run-start':
          break;
      }
    }
  } catch (error) {
    // The turn failed, or the stream broke (the daemon went away): the error goes on a line of its own.
    if (midLine) io.stdout('\n');
    midLine = false;
    throw error;
  }
  // An agent that streams no text (a delegate, a chain of thought, a workflow) gives its answer at the end.
  const answer = finish?.result.text ?? '';
  if (!streamed && answer !== '') line(answer.endsWith('\n') ? answer.slice(0, -1) : answer);
  if (midLine) io.stdout('\n');
  return finish;
}

/** What `loom chat` takes besides messages. */
const CHAT_HELP =
  'Commands: /help this list, /reset empty the session, /usage tokens and cost so far, /exit leave (or Ctrl-D). Ctrl-C stops a reply; at an empty prompt it leaves.';

/** What `loom chat` asks with at a terminal. */
const CHAT_PROMPT = 'you> ';

/** What `loom chat` says to a Ctrl-C at the prompt right after one that stopped a reply. */
const STAY_LINE = '(still here: the reply was stopped. Ctrl-C again, /exit or Ctrl-D leaves)';

/** What `loom chat` prints when a reply was cancelled. */
const CANCELLED_LINE = '[cancelled: what was said so far is kept in the session]';

/** Reports a cancel that failed; one that found the turn ended already is no failure. */
function reportCancelFailure(io: CliIo, error: unknown): void {
  if (isLoomError(error) && error.code === 'TURN_NOT_RUNNING') return;
  if (error instanceof Error && error.name === 'AbortError') return;
  io.stderr(`error: could not cancel the reply: ${error instanceof Error ? error.message : String(error)}\n`);
}

/**
 * Waits for `reply` with Ctrl-C taken, as `loom send` does with and without `--stream`: the first
 * Ctrl-C cancels the turn (the daemon's, or this process's kernel's), the same cancel as the
 * chat's: what the agent said so far is kept in the session, the cancel is said on standard error,
 * and the command ends with {@link EXIT.interrupted}. A second Ctrl-C stops waiting at once (for
 * the reply and for the cancel) and ends with the same status. Before and after, Ctrl-C ends the
 * process as usual.
 * @throws {ExitStatus} `EXIT.interrupted` after a Ctrl-C; the turn's error when it failed.
 */
async function replyUnlessInterrupted<T>(io: CliIo, backend: CliBackend, reference: string, reply: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const leave = new AbortController();
  let cancelling: Promise<unknown> | undefined;
  const interrupt = (): void => {
    if (cancelling === undefined) {
      cancelling = backend.cancelTurn(reference, { signal: leave.signal }).catch((error: unknown) => reportCancelFailure(io, error));
      return;
    }
    leave.abort();
  };
  process.on('SIGINT', interrupt);
  try {
    return await reply(leave.signal);
  } catch (error) {
    if (leave.signal.aborted) throw new ExitStatus(EXIT.interrupted);
    // Cancelled by this Ctrl-C (a cancel from elsewhere is reported as the error it is).
    if (cancelling !== undefined && isLoomError(error) && error.code === 'TURN_CANCELLED') {
      io.stderr(`${CANCELLED_LINE}\n`);
      throw new ExitStatus(EXIT.interrupted);
    }
    throw error;
  } finally {
    process.off('SIGINT', interrupt);
    if (!leave.signal.aborted) await cancelling;
  }
}

/** `loom send` and `loom chat`. */
export function registerSendCommands(program: Command, io: CliIo): void {
  program
    .command('send <agent> <message>')
    .description('send a message to an agent and print its reply')
    .option('--json', 'print { text, usage: { input_tokens, output_tokens }, iterations, cost_usd, model }')
    .option('--stream', 'print the reply as it arrives, with a line per tool call and result')
    .addHelpText(
      'after',
      '\nWith - as the message, it is read from standard input. Ctrl-C cancels the reply (what was said so far is kept in the\nsession) and exits with status 130; a second Ctrl-C exits at once.\n\nExample:\n  $ loom send researcher "What is the capital of Norway?"\n  $ loom send researcher "Summarise notes.txt" --stream\n  $ git diff | loom send reviewer -\n',
    )
    .action(async (reference: string, text: string, options: { json?: boolean; stream?: boolean }) => {
      const message = text === '-' ? (await readAll(io.stdin)).trim() : text;
      if (message === '') throw new UsageError(text === '-' ? 'standard input was empty: there is no message to send' : 'the message is empty');
      await withBackend(io, async (backend) => {
        if (options.stream === true && options.json !== true) {
          // Prints the reply as it arrives, and its footer on standard error.
          const finish = await replyUnlessInterrupted(io, backend, reference, (signal) => renderStream(io, backend.stream(reference, message, { signal })));
          if (finish !== undefined) io.stderr(`${formatTurnFooter(finish.result)}\n`);
          return;
        }
        const turn = await replyUnlessInterrupted(io, backend, reference, (signal) => backend.send(reference, message, { signal }));
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
        // At a terminal: line editing and history (arrow keys), as in any shell, and a prompt.
        const terminal = io.interactive === true;
        const output = new Writable({
          write(chunk: Buffer | string, _encoding, done) {
            io.stdout(chunk.toString());
            done();
          },
        });
        const prompt = createInterface({ input: io.stdin, terminal, ...(terminal ? { output, historySize: 500 } : {}) });
        prompt.setPrompt(CHAT_PROMPT);
        const ask = (): void => {
          if (terminal) prompt.prompt();
        };
        // Ctrl-C while a reply streams cancels the reply (the agent's turn), not the program.
        let replying = false;
        let cancelling: Promise<unknown> | undefined;
        const cancelReply = (): void => {
          cancelling ??= backend.cancelTurn(reference).catch((error: unknown) => reportCancelFailure(io, error));
        };
        // At a terminal readline reads Ctrl-C as a key: during a reply it cancels; at an empty
        // prompt it leaves, as in a shell; on a line being typed it clears the line. A Ctrl-C that
        // stopped a reply is often pressed twice: the second, landing at the empty prompt right
        // after, does not leave; it says how to, and the next one does.
        let justStopped = false;
        prompt.on('SIGINT', () => {
          if (replying) {
            justStopped = true;
            cancelReply();
          } else if (prompt.line !== '') prompt.write(null, { ctrl: true, name: 'u' });
          else if (justStopped) {
            justStopped = false;
            io.stdout(`\n${STAY_LINE}\n`);
            ask();
          } else prompt.close();
        });

        /** One line typed in the chat: a command, or a message whose reply streams. */
        const handle = async (message: string): Promise<void> => {
          if (message === '') return;
          if (message === '/help') {
            io.stdout(`${CHAT_HELP}\n`);
            return;
          }
          if (message === '/reset') {
            await backend.resetSession(reference);
            io.stdout(`The session of ${name} is empty now.\n`);
            return;
          }
          if (message === '/usage') {
            const rows = await backend.usage(name);
            io.stdout(rows.length === 0 ? 'No usage yet.\n' : formatUsage(rows));
            return;
          }
          if (message.startsWith('/')) {
            io.stderr(`unknown command ${message.split(/\s/)[0] ?? message}; ${CHAT_HELP}\n`);
            return;
          }
          io.stdout(`${name}> `);
          // Not at a terminal (stdin piped), Ctrl-C is a signal: taken only while a reply streams.
          process.on('SIGINT', cancelReply);
          replying = true;
          try {
            const finish = await renderStream(io, backend.stream(reference, message));
            if (finish !== undefined) io.stdout(`${formatTurnFooter(finish.result)}\n`);
          } catch (error) {
            // A cancelled reply is said so; a failed turn is reported; the conversation goes on.
            if (isLoomError(error) && error.code === 'TURN_CANCELLED') io.stdout(`${CANCELLED_LINE}\n`);
            else io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
          } finally {
            replying = false;
            process.off('SIGINT', cancelReply);
            await cancelling;
            cancelling = undefined;
          }
        };

        try {
          io.stdout(`Chatting with ${name}. Type /help for commands, /exit or Ctrl-D to leave.\n`);
          ask();
          for await (const input of prompt) {
            const message = input.trim();
            if (message === '/exit' || message === '/quit') break;
            // Anything typed (an empty line too) ends the grace of a Ctrl-C that stopped a reply.
            if (!replying) justStopped = false;
            await handle(message);
            ask();
          }
        } finally {
          prompt.close();
        }
      });
    });

  program
    .command('cancel <agent>')
    .description("cancel the agent's running reply (whoever asked for it); what it said so far is kept in its session")
    .option('--json', 'print { agent, run_id, status }')
    .addHelpText('after', '\nExit status 2 when the agent has no turn running.\n\nExample:\n  $ loom cancel researcher\n')
    .action(async (reference: string, options: { json?: boolean }) => {
      await withBackend(io, async (backend) => {
        const view = await backend.cancelTurn(reference);
        if (options.json === true) io.stdout(`${JSON.stringify(view, null, 2)}\n`);
        else if (view.status === 'cancelled') io.stdout(`Cancelled the turn of ${view.agent}; what it said so far is kept in its session.\n`);
        else io.stdout(`The turn of ${view.agent} ended (${view.status}) before it could be cancelled.\n`);
      });
    });
}
