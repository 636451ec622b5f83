import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { useDaemonHome } from '../support/daemon-process.ts';
import { APPROVE } from '../support/forge-requests.ts';

const server = useScriptedModelServer();
const daemons = useDaemonHome('loom-stop-sandbox-');

/** A tool that doubles `n`, grows a Map until V8 itself runs out of memory, or spins. */
const CODE =
  'function execute(input) { if (input.bomb) { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); } if (input.spin) { for (;;) {} } return { n: input.n * 2 }; }';

/** The live processes whose parent is `pid`. */
async function childrenOf(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(parent) === pid && state !== 'Z') found.push(Number(entry));
  }
  return found;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const post = (url: string, path: string, body: string, type = 'application/json'): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

describe('a daemon stopped while its forged tools misbehave', () => {
  it("exits within loom stop's 15 s after one of its tools lost an isolate to V8's out-of-memory, with another call spinning, and leaves no sandbox process behind", async () => {
    await mkdir(daemons.home, { recursive: true });
    await writeFile(join(daemons.home, 'config.toml'), `[default_model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`);
    const daemon = await daemons.start();
    const manifest = `name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\nsandbox_memory_mb = 32\nsandbox_timeout_ms = 60000\n`;
    expect((await post(daemon.url, '/api/agents', manifest, 'application/toml')).status).toBe(201);
    server.script([APPROVE]);
    const request = {
      name: 'doubler',
      description: 'Doubles n',
      inputSchema: { type: 'object' },
      implementation: { mode: 'sandbox', code: CODE, allowlist: [] },
      testCases: [{ input: { n: 2 }, expectedOutput: { n: 4 } }],
    };
    expect((await post(daemon.url, '/api/tools/forged', JSON.stringify({ agent: 'smith', request }))).status).toBe(201);

    server.script([{ toolCalls: [{ name: 'doubler', input: { bomb: true } }] }, { text: 'it ran out of memory' }]);
    expect((await post(daemon.url, '/api/agents/smith/messages', JSON.stringify({ message: 'bomb' }))).status).toBe(200);
    const bombed = JSON.stringify(server.requests.at(-1)?.body);
    expect(bombed).toContain('went over its 32 MB memory limit');

    const asked = server.requests.length;
    server.script([{ toolCalls: [{ name: 'doubler', input: { spin: true } }] }, { text: 'never sent' }]);
    const spinning = post(daemon.url, '/api/agents/smith/messages', JSON.stringify({ message: 'spin' })).catch(() => undefined);
    await waitFor('the model to ask for the spinning call', () => server.requests.length > asked);
    const sandboxes = await waitFor('the sandbox process', async () => {
      const found = await childrenOf(daemon.child.pid as number);
      return found.length > 0 ? found : undefined;
    });

    daemon.child.kill('SIGTERM');
    expect(await outcomeWithin(daemon.exited, 15_000)).toEqual({ value: 0 });
    await spinning;
    await waitFor('the sandbox processes to be gone', () => sandboxes.every((pid) => !alive(pid)));
  }, 60_000);
});
