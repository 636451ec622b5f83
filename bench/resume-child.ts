// Starts a turn that calls a tool, then dies by SIGKILL (from bench/resume.ts) while the model is
// asked for the next step: the turn's journal holds the model's reply, the call's start and its result.
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';

const databasePath = process.argv[2];
if (databasePath === undefined) throw new Error('usage: resume-child.ts <database>');
const instant = createInstantModel({ toolName: 'agent_list' });
let calls = 0;
// The second call (after the tool result) never answers: the parent kills this process then.
const model: LanguageModelV4 = {
  ...instant,
  doGenerate: (callOptions) => {
    calls += 1;
    if (calls < 2) return instant.doGenerate(callOptions);
    console.log('waiting');
    return new Promise<never>(() => undefined);
  },
};
const bench = await openInstantBenchKernel(model, databasePath);
await bench.kernel.spawn(
  parseManifest('name = "resumer"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["agent_list"]\n', { source: 'bench.toml' })
    .manifest,
);
await bench.kernel.send('resumer', 'list the agents');
