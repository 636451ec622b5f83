import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { APPROVE } from '../support/forge-requests.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

const loom = (args: string[]) => runCli(home, args, { env: TEST_KEYS, cwd: dir.path });

const request = {
  name: 'slugify',
  description: 'Convert a string to a URL-friendly slug',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'object', properties: { slug: { type: 'string' } } },
  implementation: {
    mode: 'sandbox',
    code: "function execute(input) {\n  // lower case, dashes\n  return { slug: input.text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') };\n}",
    allowlist: [],
  },
  testCases: [{ input: { text: 'Hello World!' }, expectedOutput: { slug: 'hello-world' } }],
};

async function spawn(name: string, emergent: string): Promise<void> {
  const path = join(dir.path, `${name}.toml`);
  await writeFile(
    path,
    `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\n${emergent}`,
  );
  expect((await loom(['agent', 'spawn', path])).code).toBe(0);
}

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-tools-');
  home = join(dir.path, 'home');
  await runCli(home, ['init']);
  await writeFile(join(home, 'config.toml'), `[default_model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`);
  await writeFile(join(dir.path, 'request.json'), JSON.stringify(request));
});
afterEach(async () => {
  await dir.remove();
});

describe('loom tools (no daemon)', () => {
  it('forges from a file, lists, shows the source and verdicts, exports, and imports into another agent', async () => {
    await spawn('smith', 'persist_sandbox_source = true\n');
    await spawn('other', '');
    model.script([APPROVE]);
    const forged = await loom(['tools', 'forge', 'request.json', '--agent', 'smith']);
    expect(forged).toMatchObject({ code: 0, stderr: '' });
    expect(forged.stdout).toMatch(/^registered slugify \([0-9a-f]{8}\) for smith, session tier\n$/);
    const id = /\(([0-9a-f]{8})\)/.exec(forged.stdout)?.[1] ?? '';

    const list = await loom(['tools', 'list']);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+AGENT\s+TIER\s+STATUS\s+MODE\s+CALLS\s+SUCCESS\s+MEAN MS\n/);
    expect(list.stdout).toContain(`${id}  slugify  smith  session  active  sandbox  0      -        -`);

    const shown = await loom(['tools', 'show', id]);
    expect(shown.stdout).toContain('creation: approved, confidence 0.9');
    expect(shown.stdout).toContain('// lower case, dashes');

    expect((await loom(['tools', 'export', id, '-o', 'slugify.yaml'])).stdout).toBe('wrote slugify.yaml\n');
    const yaml = await readFile(join(dir.path, 'slugify.yaml'), 'utf8');
    expect(yaml).toContain('schema: agentos.emergent-tool.v1');
    expect(yaml).toContain('redacted: false');
    model.script([APPROVE]);
    const imported = await loom(['tools', 'import', 'slugify.yaml', '--agent', 'other']);
    expect(imported.stdout).toMatch(/^registered slugify \([0-9a-f]{8}\) for other, session tier\n$/);
  });

  it("a refused forge exits 1 with the stage and reason; a bad request file is named with the parser's position", async () => {
    await spawn('smith', '');
    model.script([{ text: JSON.stringify({ approved: false, confidence: 0.1, issues: ['no input checks'] }) }]);
    const refused = await loom(['tools', 'forge', 'request.json', '--agent', 'smith']);
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: 'refused: the tool was refused at the judge stage: the judge refused it: no input checks\n' });
    await writeFile(join(dir.path, 'bad.json'), '{"name": "x",');
    const bad = await loom(['tools', 'forge', 'bad.json', '--agent', 'smith']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: cannot read forge request "bad\.json": .*JSON/);
  });

  it('a sandbox tool whose source is not persisted ends with the process, and cannot be promoted; a person demotes', async () => {
    await spawn('smith', '');
    model.script([APPROVE]);
    const id = /\(([0-9a-f]{8})\)/.exec((await loom(['tools', 'forge', 'request.json', '--agent', 'smith'])).stdout)?.[1] ?? '';
    // Each CLI command without a daemon is its own process: the code lived only in the first.
    const shown = await loom(['tools', 'show', id]);
    expect(shown.stdout).toContain('retired (its source was kept only in memory ([emergent].persist_sandbox_source = false), so it ended with the process)');
    expect(shown.stdout).toContain('source: not stored ([emergent].persist_sandbox_source = false); sha256 ');
    const promote = await loom(['tools', 'promote', id]);
    expect(promote.code).not.toBe(0);
    expect(promote.stderr).toContain('is retired');
  });

  it('promotes a persisted session tool by the panel; the shared tier needs a daemon; demotes it again', async () => {
    await spawn('smith', 'persist_sandbox_source = true\n');
    model.script([APPROVE]);
    const id = /\(([0-9a-f]{8})\)/.exec((await loom(['tools', 'forge', 'request.json', '--agent', 'smith'])).stdout)?.[1] ?? '';
    model.script([APPROVE, APPROVE]);
    expect((await loom(['tools', 'promote', id])).stdout).toBe('promoted slugify to the agent tier\n');
    // The shared tier needs a person, and so a daemon to wait for them.
    const shared = await loom(['tools', 'promote', id]);
    expect(shared).toMatchObject({ code: 2, stdout: '' });
    expect(shared.stderr).toContain("promoting to the shared tier waits for a person's approval, and only a running daemon can wait for it");
    expect((await loom(['tools', 'demote', id, '--reason', 'too broad'])).stdout).toBe('slugify is now in the session tier\n');
  });
});
