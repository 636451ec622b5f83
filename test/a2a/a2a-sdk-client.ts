import { randomUUID } from 'node:crypto';
import { type Message, Role } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';

/**
 * The official A2A client for `agent` of the daemon at `baseUrl`, sending `key` as a bearer token
 * with every request, the card's included (a daemon with keys shows a card only to a key that
 * reaches its agent). `version` 0.3: a 0.3 peer, reading the card served without `A2A-Version`
 * (0.3's shape) with the SDK's 0.3 card parser, and speaking 0.3 over `transport`.
 */
export async function a2aClient(
  baseUrl: string,
  agent: string,
  key: string,
  transport: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC',
  version: '1.0' | '0.3' = '1.0',
): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), authorization: `Bearer ${key}` } });
  const legacyCompat = { enabled: version === '0.3' };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl, legacyCompat })],
      preferredTransports: [transport],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  const cardUrl = `${baseUrl}/a2a/${agent}/.well-known/agent-card.json`;
  if (version === '1.0') return factory.createFromUrl(cardUrl, '');
  return factory.createFromAgentCard(parseLegacyAgentCard(await (await fetchImpl(cardUrl)).json()));
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
