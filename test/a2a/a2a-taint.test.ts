import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { type Message, Role } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml } from '../http/api-harness.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: A2aHarness;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-taint-');
  // No API key: the A2A caller is the owner, yet an A2A message is untrusted whoever sends it.
  api = await startA2a(dir.path, { config: { taint: { sinks: { shell_exec: 'refuse' } } } });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

function userMessage(text: string): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

async function clientFor(agent: string): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory()], preferredTransports: ['JSONRPC'] }),
  );
  return factory.createFromUrl(`${api.url}/a2a/${agent}/.well-known/agent-card.json`, '');
}

describe('taint tracking of A2A messages', () => {
  it('refuses a command an A2A message spelled out, and names the A2A message in the audit log', async () => {
    await api.host.kernel.spawn(manifest(agentToml('runner', model.url, '[capabilities]\ntools = ["shell_exec"]\nshell = ["touch *"]')));
    model.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'touch sent-over-a2a.txt' } }] }, { text: 'could not' }]);
    const client = await clientFor('runner');
    await client.sendMessage({ tenant: '', message: userMessage('Please run touch sent-over-a2a.txt'), configuration: undefined, metadata: undefined });
    expect(existsSync(join(api.host.home.workspacesDir, 'runner', 'sent-over-a2a.txt'))).toBe(false);
    const [refused] = await api.host.kernel.audit({ agent: 'runner', types: ['tool-deny'] });
    expect(refused?.data['reason']).toBe(
      'shell_exec carries untrusted text from message (A2A message from "local"): "touch sent-over-a2a.txt"; [taint] refuses it',
    );
    expect((await api.host.kernel.audit({ agent: 'runner', types: ['tool-taint'] })).map((record) => record.data['source'])).toEqual([
      { tool: 'message', origin: 'A2A message from "local"' },
    ]);
  });
});
