/**
 * agent.json keys that an object would take as its prototype (`workflows.__proto__`) are refused,
 * naming the key, where they were dropped without a word: the binding never ran, and nothing said so.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadPackage } from '../../src/packages/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, writePackage } from './support.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
beforeEach(async () => {
  dir = await makeTempDir('loom-package-proto-');
});
afterEach(async () => {
  await dir.remove();
});

const binding = JSON.stringify(bindingJson({ type: 'manual' }, [activityJson('work')]));

async function refusal(agentJson: string): Promise<string> {
  const folder = await writePackage(dir.path, 'broken', agentJson);
  try {
    await loadPackage(folder);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the package loaded');
}

it.each(['__proto__', 'constructor', 'prototype'])('refuses a binding named "%s", naming the key', async (name) => {
  const text = await refusal(`{ "workflows": { "job": ${binding}, "${name}": ${binding} } }`);
  expect(text).toMatch(/^cannot load package "/);
  expect(text).toContain(
    `agent.json: workflows.${name}: "${name}" cannot be a binding name: it names what every object inherits ("__proto__", "constructor", "prototype" are refused); choose another name`,
  );
});

it('refuses a binding input named "__proto__", naming the key', async () => {
  const withInput = JSON.stringify(bindingJson({ type: 'manual' }, [activityJson('work')], { inputs: { topic: 'x' } })).replace(
    '"topic":"x"',
    '"topic":"x","__proto__":{"admin":true}',
  );
  const text = await refusal(`{ "workflows": { "job": ${withInput} } }`);
  expect(text).toContain('agent.json: workflows.job.inputs.__proto__: "__proto__" cannot be an input name');
});

it('refuses "__proto__" at the top of agent.json as an unknown key', async () => {
  const text = await refusal(`{ "__proto__": { "workflows": {} }, "workflows": { "job": ${binding} } }`);
  expect(text).toContain('__proto__');
});
