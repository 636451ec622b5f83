import { generateText } from 'ai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { callWithFallback, createModelResolver, ModelCallFailedError, type ModelTarget } from '../../src/models/index.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.ts';

let primary: ScriptedModelServer;
let secondary: ScriptedModelServer;
beforeAll(async () => {
  [primary, secondary] = await Promise.all([startScriptedModelServer(), startScriptedModelServer()]);
});
afterAll(async () => {
  await Promise.all([primary.close(), secondary.close()]);
});

afterEach(() => {
  // Every scripted step was used: a model call the code under test should have made, and did not, fails here.
  expect(primary.remaining()).toBe(0);
  expect(secondary.remaining()).toBe(0);
});

let clock: FakeClock;
let logger: RecordingLogger;
beforeEach(() => {
  primary.reset();
  secondary.reset();
  clock = createFakeClock();
  logger = createRecordingLogger();
});

const resolver = createModelResolver({ env: { ANTHROPIC_API_KEY: 'sk-ant-test', OPENAI_API_KEY: 'sk-openai-test' } });
const claude = (): ModelTarget => ({ provider: 'anthropic', model: 'claude-sonnet-4-5', base_url: primary.url });
const gpt = (): ModelTarget => ({ provider: 'openai', model: 'gpt-4o', base_url: secondary.url });

/** One model turn as the runtime makes it: the AI SDK's own retries off, so the chain retries. */
const turn = async (target: ModelTarget, signal: AbortSignal): Promise<string> =>
  (await generateText({ model: resolver.resolve(target), prompt: 'hi', maxRetries: 0, abortSignal: signal })).text;

describe('callWithFallback()', () => {
  it("returns the primary model's reply with no failures when it answers", async () => {
    primary.script([{ text: 'from claude' }]);
    const result = await callWithFallback([claude(), gpt()], turn, { clock, logger, retries: 0 });
    expect(result).toMatchObject({ value: 'from claude', model: { provider: 'anthropic' }, failures: [] });
    expect(secondary.requests).toHaveLength(0);
  });

  it("moves on to the next model after a 500 on the primary, keeping the primary's error", async () => {
    primary.script([{ status: 500 }]);
    secondary.script([{ text: 'from gpt' }]);
    const result = await callWithFallback([claude(), gpt()], turn, { clock, logger, retries: 0 });
    expect(result.value).toBe('from gpt');
    expect(result.model.provider).toBe('openai');
    expect(result.failures).toEqual([
      { model: 'anthropic/claude-sonnet-4-5', attempts: 1, status: 500, retryable: true, message: expect.stringContaining('HTTP 500') as string },
    ]);
    expect(logger.entries.filter((entry) => entry.level === 'warn')).toHaveLength(1);
  });

  it('retries a 429 after the retry-after delay on the clock, then succeeds on the same model', async () => {
    primary.script([{ status: 429, headers: { 'retry-after': '2' } }, { text: 'after the wait' }]);
    const retrying = logger.next('debug');
    const pending = callWithFallback([claude(), gpt()], turn, { clock, logger });
    expect((await retrying).bindings).toMatchObject({ status: 429, retryInMs: 2000 });

    await clock.advance(1999);
    expect(primary.requests).toHaveLength(1);
    expect(clock.pending()).toBe(1);

    await clock.advance(1);
    const result = await pending;
    expect(result).toMatchObject({ value: 'after the wait', model: { provider: 'anthropic' }, failures: [] });
    expect(primary.requests).toHaveLength(2);
    expect(secondary.requests).toHaveLength(0);
  });

  it('honours retry-after-ms over retry-after', async () => {
    primary.script([{ status: 503, headers: { 'retry-after-ms': '250', 'retry-after': '20' } }, { text: 'ok' }]);
    const retrying = logger.next('debug');
    const pending = callWithFallback([claude()], turn, { clock, logger });
    expect((await retrying).bindings['retryInMs']).toBe(250);
    await clock.advance(250);
    expect((await pending).value).toBe('ok');
  });

  it('backs off exponentially from baseDelayMs when no retry-after is given, then moves on', async () => {
    primary.script([{ status: 500 }, { status: 502 }, { status: 503 }]);
    secondary.script([{ text: 'fallback' }]);
    const delays: unknown[] = [];
    const pending = callWithFallback([claude(), gpt()], turn, { clock, logger, retries: 2, baseDelayMs: 100 });
    await logger.next('debug');
    const secondFailure = logger.next('debug');
    await clock.advance(100);
    await secondFailure;
    await clock.advance(200);
    const result = await pending;
    for (const entry of logger.entries) delays.push(entry.bindings['retryInMs']);
    expect(delays).toEqual([100, 200, null]);
    expect(result.value).toBe('fallback');
    expect(result.failures[0]).toMatchObject({ attempts: 3, status: 503 });
  });

  it('logs a model that failed after its retries as one warning with its cause and the model tried next (regression: a warning per attempt)', async () => {
    primary.script([{ status: 500 }, { status: 502 }, { status: 503 }]);
    const pending = callWithFallback([claude()], turn, { clock, logger, retries: 2, baseDelayMs: 100 });
    await logger.next('debug');
    await clock.advance(100);
    await logger.next('debug');
    await clock.advance(200);
    await expect(pending).rejects.toBeInstanceOf(ModelCallFailedError);
    const warnings = logger.entries.filter((entry) => entry.level !== 'debug');
    expect(warnings.map((entry) => entry.message)).toEqual([
      expect.stringMatching(/^model call to "anthropic\/claude-sonnet-4-5" failed \(3 attempts\): HTTP 503/),
    ]);
    expect(logger.entries.filter((entry) => entry.level === 'debug')).toHaveLength(2);

    primary.script([{ status: 401 }]);
    secondary.script([{ text: 'from gpt' }]);
    const before = logger.entries.length;
    await callWithFallback([claude(), gpt()], turn, { clock, logger });
    expect(logger.entries.slice(before).map((entry) => [entry.level, entry.message])).toEqual([
      ['warn', expect.stringMatching(/failed: HTTP 401.*; falling back to "openai\/gpt-4o"$/)],
    ]);
  });

  it('moves on at once after a 401, without retrying the model', async () => {
    primary.script([{ status: 401 }]);
    secondary.script([{ text: 'from gpt' }]);
    const result = await callWithFallback([claude(), gpt()], turn, { clock, logger });
    expect(result.value).toBe('from gpt');
    expect(result.failures).toMatchObject([{ attempts: 1, status: 401, retryable: false }]);
    expect(primary.requests).toHaveLength(1);
    expect(clock.now()).toBe(createFakeClock().now());
  });

  it('moves on instead of waiting when retry-after asks for longer than maxDelayMs', async () => {
    primary.script([{ status: 429, headers: { 'retry-after': '120' } }]);
    secondary.script([{ text: 'from gpt' }]);
    const result = await callWithFallback([claude(), gpt()], turn, { clock, logger, maxDelayMs: 30_000 });
    expect(result.value).toBe('from gpt');
    expect(result.failures).toMatchObject([{ attempts: 1, status: 429 }]);
  });

  it('names the one model of a chain of one when it fails', async () => {
    primary.script([{ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'bad prompt' } } }]);
    const error = await callWithFallback([claude()], turn, { clock, logger }).catch((caught: unknown) => caught);
    expect((error as ModelCallFailedError).message).toBe(
      'cannot get a reply: the model failed: "anthropic/claude-sonnet-4-5" (1 attempt): HTTP 400: bad prompt',
    );
  });

  it('throws one MODEL_CALL_FAILED error listing every model and its error when all fail', async () => {
    primary.script([{ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'bad prompt' } } }]);
    secondary.script([{ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } }]);
    const error = await callWithFallback([claude(), gpt()], turn, { clock, logger }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelCallFailedError);
    const failed = error as ModelCallFailedError;
    expect(failed.code).toBe('MODEL_CALL_FAILED');
    expect(failed.message).toMatch(/all 2 models failed/);
    expect(failed.message).toMatch(/"anthropic\/claude-sonnet-4-5" \(1 attempt\): HTTP 400: bad prompt/);
    expect(failed.message).toMatch(/"openai\/gpt-4o" \(1 attempt\): HTTP 401: Incorrect API key provided/);
    expect(failed.details['failures']).toMatchObject([
      { model: 'anthropic/claude-sonnet-4-5', status: 400 },
      { model: 'openai/gpt-4o', status: 401 },
    ]);
  });

  it('stops at once when aborted during a retry wait, trying no other model', async () => {
    primary.script([{ status: 429, headers: { 'retry-after': '5' } }]);
    const controller = new AbortController();
    const retrying = logger.next('debug');
    const pending = callWithFallback([claude(), gpt()], turn, { clock, logger, signal: controller.signal });
    await retrying;
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toThrow('user cancelled');
    expect(clock.pending()).toBe(0);
    expect(secondary.requests).toHaveLength(0);
  });

  it('tries nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(callWithFallback([claude(), gpt()], turn, { clock, logger, signal: controller.signal })).rejects.toThrow('gone');
    expect(primary.requests).toHaveLength(0);
  });

  it('retries an error thrown by a call timeout, as retryable', async () => {
    let calls = 0;
    const flaky = (): Promise<string> => {
      calls++;
      return calls === 1 ? Promise.reject(new DOMException('The operation timed out.', 'TimeoutError')) : Promise.resolve('second try');
    };
    const pending = callWithFallback([claude()], flaky, { clock, logger, baseDelayMs: 10 });
    await logger.next('debug');
    await clock.advance(10);
    expect((await pending).value).toBe('second try');
  });
});
