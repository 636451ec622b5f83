import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { logAiSdkWarnings } from '../../src/daemon/index.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe("the AI SDK's warnings", () => {
  const server = useScriptedModelServer();
  let restore: () => void = () => undefined;
  afterEach(() => restore());

  it('go to the daemon\'s logger at warn, naming the model, not to standard error as "(node:PID) Warning: AI SDK Warning" lines', async () => {
    const logger = createRecordingLogger();
    restore = logAiSdkWarnings(logger);
    const raw: Error[] = [];
    const onWarning = (warning: Error): void => {
      raw.push(warning);
    };
    process.on('warning', onWarning);
    try {
      server.script([{ text: 'fine' }]);
      const model = createOpenAICompatible({ name: 'scripted', baseURL: server.url }).chatModel('m1');
      // topK is a setting the OpenAI-compatible API has no field for: the SDK warns and drops it.
      const result = await generateText({ model, prompt: 'hi', topK: 3, maxRetries: 0 });
      expect(result.text).toBe('fine');
    } finally {
      process.off('warning', onWarning);
    }
    const warned = logger.entries.filter((entry) => entry.level === 'warn');
    expect(warned).toHaveLength(1);
    expect(warned[0]?.message).toMatch(/^model library warning \(scripted\.chat\/m1\): topK is not supported/);
    expect(warned[0]?.bindings).toMatchObject({ component: 'ai-sdk', warningType: 'unsupported' });
    expect(raw.filter((warning) => warning.message.includes('AI SDK'))).toEqual([]);
  });

  it("go back to the SDK's own handling once restored", () => {
    const holder = globalThis as { AI_SDK_LOG_WARNINGS?: unknown };
    const before = holder.AI_SDK_LOG_WARNINGS;
    const undo = logAiSdkWarnings(createRecordingLogger());
    expect(typeof holder.AI_SDK_LOG_WARNINGS).toBe('function');
    undo();
    expect(holder.AI_SDK_LOG_WARNINGS).toBe(before);
  });
});
