import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createChannelService } from '../src/channels/index.ts';
import { createSystemClock } from '../src/clock/index.ts';
import { ChannelConfigSchema } from '../src/config/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { startFakeTelegramServer } from '../test/support/fake-telegram-server.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { summarize } from './stats.ts';

const WARMUP = 30;
const MESSAGES = 300;
/** Messages rotate over this many people, each in their own chat (a session each). */
const PEOPLE = 30;

/**
 * From a platform's event to the first reply on it: a Telegram update pushed to a Bot API server
 * on loopback, grammY's long poll taking it, the message stored, the policy, the agent's durable
 * turn on an instant model, and the reply's `sendMessage` arriving back at the server.
 */
export async function channelsBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-channels-'));
  const telegram = await startFakeTelegramServer();
  const bench = await openInstantBenchKernel(createInstantModel());
  const clock = createSystemClock();
  const people = Array.from({ length: PEOPLE }, (_, index) => String(1000 + index));
  const config = ChannelConfigSchema.parse({
    name: 'tg',
    kind: 'telegram',
    agent: 'assistant',
    token_env: 'TOKEN',
    api_base_url: telegram.url,
    policy: { direct: 'allowlist', allow_users: people, messages_per_minute: 10_000 },
  });
  const channels = createChannelService({
    channels: [config],
    kernel: bench.kernel,
    store: bench.store,
    clock,
    logger: createSilentLogger(),
    env: { TOKEN: telegram.token },
  });
  try {
    await bench.kernel.spawn(parseManifest('name = "assistant"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n', { source: 'bench.toml' }).manifest);
    await channels.start();
    const durations: number[] = [];
    for (let index = 0; index < WARMUP + MESSAGES; index += 1) {
      const person = Number(people[index % PEOPLE]);
      const reply = telegram.nextSend();
      const started = performance.now();
      telegram.push({ id: person, type: 'private' }, { id: person, first_name: `P${person}` }, `message ${index}`);
      await reply;
      if (index >= WARMUP) durations.push(performance.now() - started);
    }
    await channels.idle();
    return {
      bench: 'channels',
      ...summarize(durations),
      includes:
        'a Telegram update on a loopback Bot API server → grammY long poll → stored in SQLite → policy → durable turn on an instant model (session per chat, canonical memory per person) → sendMessage back at the server',
    };
  } finally {
    await channels.stop();
    await bench.dispose();
    await telegram.close();
    await rm(dir, { recursive: true, force: true });
  }
}
