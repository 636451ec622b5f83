import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { type MeteredCall, observeModelCalls } from '../../src/kernel/index.ts';
import { BudgetLedger, TokenBudget } from '../../src/kernel/budget-ledger.ts';
import { QuotaTracker } from '../../src/kernel/quota-tracker.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openAiTextChunkFrame } from '../support/openai-chunk.ts';
import { openTestHost, settleWithClock, type TestHost } from '../support/test-host.ts';

// The budget ledger reads each streamed model call through to see how it ends: a call that
// reports its usage settles with it; one whose connection breaks halfway was answering, so it is
// counted at an estimate of what it read and wrote, not as free.

const scripted = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let calls: MeteredCall[];
let unobserve: () => void;
let broken: Server | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-metered-stream-');
  host = await openTestHost(dir.path);
  calls = [];
  unobserve = observeModelCalls((call) => calls.push(call));
});
afterEach(async () => {
  unobserve();
  await host.close();
  await dir.remove();
  await new Promise<void>((resolve) => (broken === undefined ? resolve() : broken.close(() => resolve())));
  broken = undefined;
});

const agent = (name: string, url: string): string => `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${url}"\n`;

/** An OpenAI-compatible endpoint that streams the start of an answer, then drops the connection. */
async function serveBrokenStream(text: string): Promise<string> {
  broken = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(openAiTextChunkFrame(text), () => response.socket?.destroy());
    });
  });
  await new Promise<void>((resolve) => broken?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
}

async function streamed(name: string, message: string): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of host.kernel.stream(name, message)) events.push(event);
  return events;
}

describe('a streamed model call, metered', () => {
  it('settles with the usage its finish reported', async () => {
    await host.kernel.spawn(manifest(agent('teller', scripted.url)));
    scripted.script([{ text: 'All done', usage: { inputTokens: 40, outputTokens: 7 } }]);

    const events = await streamed('teller', 'hello');

    expect(events.at(-1)?.type).toBe('run-finish');
    expect(calls.map((call) => [call.outcome, call.spent.inputTokens, call.spent.outputTokens])).toEqual([['ok', 40, 7]]);
  });

  it('whose connection breaks halfway is counted as cut off, at an estimate of what it wrote, and the turn ends with an error', async () => {
    await host.kernel.spawn(manifest(agent('teller', await serveBrokenStream('Once upon a time'))));

    // The call is retried after a pause on the fake clock; each try breaks the same way.
    const events = await settleWithClock(host.clock, streamed('teller', 'Tell me a story'));

    expect(events.at(-1)?.type).toBe('error');
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.outcome).toBe('cut-off');
      expect(call.spent.inputTokens).toBeGreaterThan(0);
      // "Once upon a time" is 16 characters: four tokens at four characters a token.
      expect(call.spent.outputTokens).toBe(4);
    }
  });

  it('whose source fails while nobody reads it is cut off then, not at the next read: its budget holds what it wrote', async () => {
    let source: ReadableStreamDefaultController<LanguageModelV4StreamPart> | undefined;
    const model = new MockLanguageModelV4({
      doStream: () =>
        Promise.resolve({
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            start: (controller) => {
              source = controller;
            },
          }),
        }),
    });
    const budget = new TokenBudget(1000, 'the test');
    const ledger = new BudgetLedger(new QuotaTracker(host.clock, host.store.usage));
    const metered = ledger.meter({ resolve: () => model }, { budgets: [budget], price: () => 0 }).resolve({ provider: 'openai', model: 'gpt-4o' });
    const { stream } = await metered.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story' }] }] });
    const reader = stream.getReader();
    source?.enqueue({ type: 'text-delta', id: 't', delta: 'Once upon a time' });
    expect((await reader.read()).value).toMatchObject({ delta: 'Once upon a time' });

    // The consumer reads no further; the provider's connection breaks.
    source?.error(new Error('connection reset'));
    await new Promise((resolve) => setImmediate(resolve));

    expect(calls.map((call) => [call.outcome, call.spent.outputTokens])).toEqual([['cut-off', 4]]);
    expect(budget.outputTokens).toBe(4);
    await expect(reader.read()).rejects.toThrow('connection reset');
  });
});
