import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const examples = join(import.meta.dirname, '../../examples/agents');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-examples-keys-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

/**
 * The examples that pin a hosted provider do not run on the scripted model: on a machine without
 * keys `loom agent spawn` says which key each needs (the README's examples table says the same).
 */
describe('the examples that need a key, spawned without one', () => {
  it.each([
    ['researcher.toml', 'researcher', 'ANTHROPIC_API_KEY'],
    ['coordinator.toml', 'coordinator', 'ANTHROPIC_API_KEY'],
    ['helper.toml', 'helper-wiki', 'GROQ_API_KEY'],
  ])('%s: loom agent spawn says it needs %s', async (file, name, key) => {
    const spawned = await runCli(home, ['agent', 'spawn', join(examples, file)], { env: {} });
    expect(spawned.code).toBe(0);
    expect(spawned.stdout).toMatch(new RegExp(`^spawned ${name} \\(`));
    expect(spawned.stderr).toContain(`warning: agent "${name}" cannot run: model `);
    expect(spawned.stderr).toMatch(new RegExp(`\\(\\[model\\]\\) needs ${key}, which is not set; set ${key} in the daemon's environment`));
  });
});
