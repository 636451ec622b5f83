import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TurnRecord } from '../../src/kernel/index.ts';
import { QuotaExceededError } from '../../src/errors/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

// A turn cancelled while its model streamed an answer was billed for the prompt the provider read
// and what it wrote, though no usage came back: it is counted at an estimate, not as free.

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let release: () => void;
let held: Promise<void>;

beforeEach(async () => {
  dir = await makeTempDir('loom-cancelled-spend-');
  host = await openTestHost(dir.path);
  held = new Promise((resolve) => (release = resolve));
});
afterEach(async () => {
  release();
  await host.close();
  await dir.remove();
});

const agent = (name: string, extra = ''): string =>
  `name = "${name}"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "${server.url}"\n${extra}\n`;

async function readUntil(events: AsyncIterator<AgentEvent>, until: (text: string) => boolean): Promise<void> {
  let text = '';
  for (;;) {
    const next = await events.next();
    if (next.done === true) throw new Error('the stream ended first');
    if (next.value.type === 'text-delta') text += next.value.text;
    if (until(text)) return;
  }
}

async function drain(events: AsyncIterator<AgentEvent>): Promise<void> {
  for (let next = await events.next(); next.done !== true; next = await events.next());
}

describe('a turn cancelled while the model answers', () => {
  it('records the cut-off call with its estimated tokens and cost in the usage, the trace and the quota', async () => {
    await host.kernel.spawn(manifest(agent('teller', '[resources]\nmax_tokens_per_hour = 50')));
    server.script([{ text: 'Once upon a time', stall: held }, { text: 'never sent' }]);
    const events = host.kernel.stream('teller', 'Tell me a long story')[Symbol.asyncIterator]();
    await readUntil(events, (text) => text === 'Once upon a time');
    await host.kernel.cancelTurn('teller', { by: 'owner' });
    await drain(events);

    const usage = await host.store.usage.list();
    expect(usage).toHaveLength(1);
    const [call] = usage;
    expect(call?.model).toBe('anthropic/claude-sonnet-4-5');
    expect(call?.inputTokens).toBeGreaterThan(0);
    // "Once upon a time" is 16 characters: four tokens at four characters a token.
    expect(call?.outputTokens).toBe(4);
    expect(call?.costUsd).toBeCloseTo(((call?.inputTokens ?? 0) * 3 + 4 * 15) / 1_000_000, 12);

    const session = (await host.store.sessions.get(host.kernel.get('teller').session_id))?.messages as Record<string, unknown>[];
    const record = (session[0]?.['providerOptions'] as { loom: { turn: TurnRecord } }).loom.turn;
    expect(record).toMatchObject({ status: 'cancelled', inputTokens: call?.inputTokens, outputTokens: 4 });
    expect(record.costUsd).toBeCloseTo(call?.costUsd ?? 0, 12);
    expect(record.steps).toMatchObject([{ kind: 'model', estimated: true, inputTokens: call?.inputTokens, outputTokens: 4 }]);

    // The hour's quota counted it: 50 tokens are spent, so the next message is refused.
    await expect(host.kernel.send('teller', 'Go on')).rejects.toThrow(QuotaExceededError);
    expect((await host.kernel.usage({ agent: 'teller' }))[0]).toMatchObject({ calls: 1, input_tokens: call?.inputTokens, output_tokens: 4 });
  });
});
