import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { openTestHost } from '../support/test-host.ts';
import { runCli } from '../support/run-cli.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

const CONFIG = `[[channels]]
name = "support"
kind = "webhook"
agent = "helper"
secret_env = "SUPPORT_SECRET"
reply_url = "https://example.com/replies"
`;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-channels-');
  home = join(dir.path, 'home');
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'config.toml'), CONFIG);
});
afterEach(async () => {
  await dir.remove();
});

describe('loom channels', () => {
  it('lists the channels of config.toml, shows who waits for pairing, and approves a code', async () => {
    const host = await openTestHost(dir.path, {
      channels: [{ name: 'support', kind: 'webhook', agent: 'helper', secret_env: 'SUPPORT_SECRET', reply_url: 'https://example.com/replies' }],
    });
    await host.store.channels.requestPairing({
      code: 'K7QH2M',
      channel: 'support',
      userId: 'u-bob',
      userName: 'Bob',
      createdAt: Date.UTC(2026, 0, 1),
      approvedAt: null,
    });
    await host.close();

    const list = await runCli(home, ['channels', 'list']);
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+KIND\s+AGENT\s+STATE\s+LAST MESSAGE\s+WAITING$/);
    expect(list.stdout.split('\n')[1]).toMatch(/^support\s+webhook\s+helper\s+stopped\s+-\s+1$/);

    const status = await runCli(home, ['channels', 'status']);
    expect(status.stdout).toContain('support (webhook) → agent helper: stopped — channels run in the daemon (loom start)');
    expect(status.stdout).toContain('direct messages: pairing; groups: closed; 10 messages a minute per person');
    expect(status.stdout).toContain('waiting: Bob (u-bob) since 2026-01-01T00:00:00.000Z — loom channels approve K7QH2M');

    const approved = await runCli(home, ['channels', 'approve', 'k7qh2m']);
    expect(approved).toMatchObject({ code: 0, stdout: 'approved: Bob (u-bob) may now talk on channel support\n' });
    const unknown = await runCli(home, ['channels', 'approve', 'ZZZZZZ']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no one was given the pairing code "ZZZZZZ"');
    const json = JSON.parse((await runCli(home, ['channels', 'list', '--json'])).stdout) as { pendingPairings: unknown[] }[];
    expect(json[0]?.pendingPairings).toEqual([]);
  });
});
