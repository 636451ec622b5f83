import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-doctor-');
  home = join(dir.path, 'home');
  await runCli(home, ['init']);
  await writeFile(join(home, 'config.toml'), '[daemon]\nport = 0\n');
});
afterEach(async () => {
  await dir.remove();
});

describe('loom doctor', () => {
  it('checks Node, the home, the database, the keys, Ollama and the port', async () => {
    const result = await runCli(home, ['doctor'], { env: { OPENAI_API_KEY: 'sk-test' } });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`✓ Node.js ${process.version}`);
    expect(result.stdout).toContain(`✓ home folder ${home}, config valid`);
    expect(result.stdout).toMatch(/✓ database .*loom\.db: ok/);
    expect(result.stdout).toMatch(/✓ model keys: OPENAI_API_KEY \(not set: .*ANTHROPIC_API_KEY/);
    expect(result.stdout).toMatch(/Ollama (answers|does not answer) at http:\/\/127\.0\.0\.1:11434/);
    expect(result.stdout).toContain('port 127.0.0.1:0 is free');
  });

  it('reports an invalid config.toml as a failed check, runs the others, and says when there is no default model', async () => {
    await writeFile(join(home, 'config.toml'), '[daemon]\nprot = 0\n');
    const result = await runCli(home, ['doctor']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✗ config .*config\.toml: .*\[daemon\]\.prot: unknown key, did you mean "port"\?/);
    expect(result.stdout).toMatch(/✓ database .*loom\.db: ok/);
    expect(result.stdout).toContain('! no [default_model]: agents without [model] cannot run (loom init sets one)');
  });

  it('says which keys it looked for when none is set, without failing', async () => {
    const result = await runCli(home, ['doctor']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/! no model key set \(looked for ANTHROPIC_API_KEY, OPENAI_API_KEY, GROQ_API_KEY, OPENROUTER_API_KEY\)/);
  });

  it('fails, naming the problem, when the database is damaged', async () => {
    const store = openSqliteStore({ path: join(home, 'data', 'loom.db') });
    await store.close();
    await writeFile(join(home, 'data', 'loom.db'), 'this is not a database');
    const result = await runCli(home, ['doctor']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✗ database .*loom\.db: cannot open/);
  });
});
