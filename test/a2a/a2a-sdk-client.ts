import { randomUUID } from 'node:crypto';
import { type Message, Role } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

/**
 * The official A2A client for `agent` of the daemon at `baseUrl`, sending `key` as a bearer token
 * with every request, the card's included (a daemon with keys shows a card only to a key that
 * reaches its agent).
 */
export async function a2aClient(baseUrl: string, agent: string, key: string, transport: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), authorization: `Bearer ${key}` } });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      preferredTransports: [transport],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(`${baseUrl}/a2a/${agent}/.well-known/agent-card.json`, '');
}

/** The parameters of a `SendMessage` carrying one text part. */
export function textMessage(text: string): { tenant: string; message: Message; configuration: undefined; metadata: undefined } {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
