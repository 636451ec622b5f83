import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AgentCard, TaskState } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { afterEach, describe, expect, it } from 'vitest';
import {
  a2aUserAgent,
  createA2aSendTool,
  discoverAgent,
  ExternalAgentRegistry,
  listExternalAgents,
  sendA2aMessage,
  startExternalDiscovery,
} from '../../src/a2a/index.ts';
import { textOf, textPart } from '../../src/a2a/agent-executor.ts';
import type { ToolContext } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';

/** A peer built from the SDK's request handler and JSON-RPC transport, on node:http. */
interface Peer {
  url: string;
  userAgents: string[];
  close(): Promise<void>;
}

const echo: AgentExecutor = {
  async execute(request, bus) {
    const { taskId, contextId } = request;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [request.userMessage],
        metadata: undefined,
      }),
    );
    // The peer yields between its events, as one doing work does (no time passes).
    await new Promise((resolve) => setImmediate(resolve));
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'a',
          name: 'answer',
          description: '',
          parts: [textPart(`echo: ${textOf(request.userMessage)}`)],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  cancelTask: () => Promise.resolve(),
};

async function readBody(request: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of request) body += String(chunk);
  return body;
}

async function startPeer(streaming: boolean): Promise<Peer> {
  const userAgents: string[] = [];
  const ref: { card?: AgentCard; handler?: DefaultRequestHandler } = {};
  const server: Server = createServer((request, response) => {
    userAgents.push(request.headers['user-agent'] ?? '');
    void (async () => {
      if (request.method === 'GET' && request.url === '/.well-known/agent-card.json') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ref.card));
        return;
      }
      const handler = ref.handler;
      if (request.method !== 'POST' || handler === undefined) {
        response.writeHead(404).end();
        return;
      }
      const answer = await new JsonRpcTransportHandler(handler).handle(await readBody(request), new ServerCallContext({ requestedVersion: '1.0' }));
      if (typeof (answer as AsyncGenerator<unknown>)[Symbol.asyncIterator] === 'function') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        for await (const event of answer as AsyncGenerator<unknown>) response.write(`data: ${JSON.stringify(event)}\n\n`);
        response.end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: 'peer',
    description: 'An SDK peer',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'echo', name: 'echo', description: 'echoes', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  ref.card = card;
  ref.handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  return { url, userAgents, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let peer: Peer | undefined;
afterEach(async () => {
  await peer?.close();
  peer = undefined;
});

function toolContext(): ToolContext {
  return { signal: new AbortController().signal } as ToolContext;
}

describe("Loom's A2A client against an @a2a-js/sdk server", () => {
  it('discovers the card with the Loom User-Agent', async () => {
    peer = await startPeer(true);
    const card = await discoverAgent(peer.url, { version: '1.2.3' });
    expect(card.name).toBe('peer');
    expect(peer.userAgents).toEqual(['Loom/1.2.3 A2A']);
    expect(a2aUserAgent('1.2.3')).toBe('Loom/1.2.3 A2A');
  });

  it.each([
    ['streaming', true],
    ['polling', false],
  ])('sends a task and gets the reply (%s)', async (_mode, streaming) => {
    peer = await startPeer(streaming);
    const card = await discoverAgent(peer.url);
    const result = await sendA2aMessage(card, 'hello');
    expect(result).toMatchObject({ state: 'completed', text: 'echo: hello' });
    expect(result.taskId).toEqual(expect.any(String));
  });

  it('discovers configured agents without throwing, lists failures, and a2a_send reaches a discovered one', async () => {
    peer = await startPeer(true);
    const registry = new ExternalAgentRegistry();
    await startExternalDiscovery(
      {
        a2a: {
          enabled: true,
          external_agents: [
            { name: 'peer', url: peer.url },
            { name: 'gone', url: 'http://127.0.0.1:1' },
          ],
        },
      },
      createSilentLogger(),
      registry,
    );
    const { agents, total } = listExternalAgents(registry);
    expect(total).toBe(2);
    expect(agents.find((agent) => agent.name === 'peer')).toMatchObject({ status: 'discovered', skills: ['echo'], streaming: true });
    expect(agents.find((agent) => agent.name === 'gone')).toMatchObject({ status: 'failed' });
    expect(agents.find((agent) => agent.name === 'gone')?.error).toEqual(expect.stringContaining(''));

    const tool = createA2aSendTool(registry);
    const input = { agent: 'peer', message: 'ping' };
    expect(await tool.requires(input, toolContext())).toEqual([{ kind: 'agent_message', pattern: 'peer' }]);
    expect(await tool.execute(input, toolContext())).toMatchObject({ text: 'echo: ping', structured: { agent: 'peer', state: 'completed' } });
    expect(await tool.execute({ agent: 'nobody', message: 'ping' }, toolContext())).toMatchObject({ isError: true });
  });
});
