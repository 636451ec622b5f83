import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadModelScript, loadModelScripts, type ScriptedModelServer, startScriptedModelServer } from '../../src/models/scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const examples = join(import.meta.dirname, '../../examples');

/** One chat completion from the server, streamed or not: its text, and when each streamed piece came (ms since the request). */
async function complete(server: ScriptedModelServer, model: string, stream = false): Promise<{ text: string; times: number[] }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  if (!stream) {
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    return { text: body.choices[0]?.message.content ?? '', times: [] };
  }
  let text = '';
  const times: number[] = [];
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += Buffer.from(chunk).toString('utf8');
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const data = buffer.slice(6, end);
      buffer = buffer.slice(end + 2);
      if (data === '[DONE]') continue;
      const content = (JSON.parse(data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content;
      if (content !== undefined && content !== '') {
        text += content;
        times.push(performance.now() - started);
      }
    }
  }
  return { text, times };
}

describe('the scripted model, with a script per model and a pace', () => {
  let server: ScriptedModelServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('gives a request the next step of the script its model names, and any other model the main script', async () => {
    server = await startScriptedModelServer({
      steps: [{ text: 'main one' }],
      scripts: { writer: { steps: [{ text: 'writer one' }, { text: 'writer two' }], loop: true }, reader: { steps: [{ text: 'reader one' }], loop: false } },
    });
    expect((await complete(server, 'writer')).text).toBe('writer one');
    expect((await complete(server, 'reader')).text).toBe('reader one');
    expect((await complete(server, 'writer')).text).toBe('writer two');
    expect((await complete(server, 'writer')).text).toBe('writer one');
    expect((await complete(server, 'gpt-4o')).text).toBe('main one');
  });

  it('streams word by word at its pace, and at once without one', async () => {
    const text = 'one two three four five six seven eight nine ten';
    server = await startScriptedModelServer({ steps: [{ text }], paceMs: 25 });
    const paced = await complete(server, 'any', true);
    expect(paced.text).toBe(text);
    expect(paced.times).toHaveLength(10);
    // Nine paces at least between the first word and the last.
    expect((paced.times.at(-1) ?? 0) - (paced.times[0] ?? 0)).toBeGreaterThanOrEqual(9 * 25 - 5);
    await server.close();
    server = await startScriptedModelServer({ steps: [{ text }] });
    expect((await complete(server, 'any', true)).text).toBe(text);
  });

  it('reads pace_ms from a script file, and refuses a negative one naming the file', async () => {
    const dir = await makeTempDir('loom-scripts-');
    try {
      await writeFile(join(dir.path, 'fast.json'), JSON.stringify({ loop: true, pace_ms: 10, steps: [{ text: 'hi' }] }));
      expect(await loadModelScript(join(dir.path, 'fast.json'))).toEqual({ loop: true, paceMs: 10, steps: [{ text: 'hi' }] });
      await writeFile(join(dir.path, 'bad.json'), JSON.stringify({ pace_ms: -1, steps: [{ text: 'hi' }] }));
      await expect(loadModelScript(join(dir.path, 'bad.json'))).rejects.toThrow(/model script ".*bad\.json": .*pace_ms/);
    } finally {
      await dir.remove();
    }
  });

  it('loads every script of examples/models by its file name', async () => {
    const scripts = await loadModelScripts(join(examples, 'models'));
    expect(Object.keys(scripts)).toEqual(expect.arrayContaining(['assistant', 'careful-writer', 'deep-thinker', 'hello', 'log-analyst', 'morning-report']));
    expect(scripts['careful-writer']?.steps[0]).toMatchObject({ toolCalls: [{ name: 'file_write', input: { path: 'haiku.txt' } }] });
  });

  it('loom model serve refuses to start with neither --script nor --scripts, saying which to give', async () => {
    const dir = await makeTempDir('loom-serve-');
    try {
      const result = await runCli(join(dir.path, 'home'), ['model', 'serve']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('give the script to play with --script <file>, or a folder of scripts with --scripts <dir>');
    } finally {
      await dir.remove();
    }
  });
});
