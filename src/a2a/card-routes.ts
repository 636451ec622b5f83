/**
 * The public routes of the A2A server: the agent cards, with no key needed to ask (with keys,
 * each card shown only to the callers that may see its agent). A card requested without
 * `A2A-Version` is the card both revisions read; with `0.3` the 0.3 card, with `1.0` the 1.0
 * card; cards carry `Cache-Control`, `ETag` and `Last-Modified` and answer 304 when current.
 */
import { A2A_VERSION_HEADER } from '@a2a-js/sdk';
import { type Context, Hono } from 'hono';
import type { AgentDetailView, Caller } from '../kernel/index.ts';
import { originOf } from './a2a-access.ts';
import { type A2aRouteContext, slashed } from './a2a-route-context.ts';
import { toCardJson, toDualCard, toLegacyCard } from './agent-cards.ts';
import { CARD_MAX_AGE_SECONDS, CardCache } from './card-cache.ts';

/**
 * With keys, what a card path answers depends on the caller's key: no cache may keep one
 * caller's answer for another (`private`, and `Vary` naming the headers a key comes in).
 */
function perCaller(headers: Headers, keyed: boolean): void {
  if (!keyed) return;
  headers.set('cache-control', `private, max-age=${CARD_MAX_AGE_SECONDS}`);
  headers.set('vary', [headers.get('vary'), 'Authorization', 'X-API-Key'].filter((value) => value !== null).join(', '));
}

/** A card path's 404: the same for an agent the caller may not see as for one that does not exist. */
function cardNotFound(c: Context, message: string, keyed: boolean): Response {
  const response = c.json({ error: { code: 'AGENT_NOT_FOUND', message } }, 404);
  perCaller(response.headers, keyed);
  return response;
}

/** Who a list of cards is for: each caller's list keeps its own Last-Modified. */
function listerOf(reader: Caller | undefined): string {
  return reader === undefined ? 'anonymous' : reader.kind === 'user' ? `${reader.role} ${reader.name ?? ''}` : reader.agentId;
}

/** The card routes: `/.well-known/agent-card.json`, `/.well-known/agent.json`, `{listen path}/agents`, `{listen path}/{agent}/.well-known/agent-card.json`. */
export function cardRoutes(context: A2aRouteContext): Hono {
  const { access, base, cardOf } = context;
  const cards = new CardCache(context.now);
  const cardResponse = (c: Context, card: { key: string; body: unknown; keyed: boolean }): Response => {
    const answer = cards.answer(`${card.key} ${originOf(c)}`, card.body, {
      ifNoneMatch: c.req.header('if-none-match'),
      ifModifiedSince: c.req.header('if-modified-since'),
      vary: A2A_VERSION_HEADER,
    });
    const headers = new Headers(answer.headers);
    perCaller(headers, card.keyed);
    return new Response(answer.body ?? null, { status: answer.status, headers });
  };
  /** The card in the shape the request asks for: 0.3 or 1.0 by `A2A-Version`, both without it. */
  const serveCard = (c: Context, agent: AgentDetailView | undefined): Response => {
    const keyed = access.keyedFor(access.readerOf(c));
    const card = cardOf(agent, originOf(c), keyed);
    const version = c.req.header(A2A_VERSION_HEADER)?.trim();
    const key = `card ${agent?.name ?? ''}`;
    if (version === undefined || version === '') return cardResponse(c, { key: `${key} dual`, body: toDualCard(card), keyed });
    return version.startsWith('0.')
      ? cardResponse(c, { key: `${key} 0.3`, body: toLegacyCard(card), keyed })
      : cardResponse(c, { key: `${key} 1.0`, body: toCardJson(card), keyed });
  };
  /** The default agent's card; a 404 naming no agent when the caller may not see it (the placeholder card when there are no agents). */
  const serveDefaultCard = (c: Context): Response => {
    const agent = access.defaultAgent();
    const reader = access.readerOf(c);
    if (agent === undefined || access.sees(reader, agent.name)) return serveCard(c, agent);
    return cardNotFound(
      c,
      'no agent card here for this caller: an agent\'s card is shown to an API key that reaches the agent ("Authorization: Bearer <key>" or "X-API-Key: <key>"), or to anyone when [a2a].public_agents names it',
      access.keyedFor(reader),
    );
  };

  const routes = new Hono();
  routes.on('GET', slashed('/.well-known/agent-card.json'), serveDefaultCard);
  routes.on('GET', slashed('/.well-known/agent.json'), serveDefaultCard);
  routes.on('GET', slashed(`${base}/agents`), (c) => {
    const origin = originOf(c);
    const reader = access.readerOf(c);
    const keyed = access.keyedFor(reader);
    const agents = context.options.kernel.list().flatMap((view) => {
      const agent = access.findAgent(view.id);
      return agent === undefined || !access.sees(reader, agent.name) ? [] : [toDualCard(cardOf(agent, origin, keyed))];
    });
    return cardResponse(c, { key: `agents ${listerOf(reader)}`, body: { agents, total: agents.length }, keyed });
  });
  routes.on('GET', slashed(`${base}/:agent/.well-known/agent-card.json`), (c) => {
    const name = c.req.param('agent') ?? '';
    const agent = access.visibleAgent(c, name);
    return agent === undefined ? cardNotFound(c, `no agent named "${name}"`, access.keyedFor(access.readerOf(c))) : serveCard(c, agent);
  });
  return routes;
}
