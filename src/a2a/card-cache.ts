import { createHash } from 'node:crypto';

/** How long a client or cache may use a card without asking again, in seconds (`Cache-Control: max-age`). */
export const CARD_MAX_AGE_SECONDS = 300;

/** Most card versions remembered for `Last-Modified` (one per agent, origin and revision asked for). */
const MAX_REMEMBERED = 1000;

/** An HTTP answer for a card: the status, the headers, and the body (none for a 304). */
export interface CardAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  body: string | undefined;
}

/** The request headers that make a card request conditional. */
export interface CardConditions {
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
}

/**
 * The caching headers of agent cards (A2A 1.0 recommends them for card endpoints):
 * `Cache-Control: public, max-age=300`, a strong `ETag` (a hash of the body), and `Last-Modified`,
 * the time this server first served that body under the same key (so it moves when the card
 * changes: a new skill, a new description, another origin). A request whose `If-None-Match`
 * names the current ETag, or (without `If-None-Match`) whose `If-Modified-Since` is not older
 * than `Last-Modified`, is answered 304 without a body (RFC 9110 §13.1).
 */
export class CardCache {
  readonly #now: () => number;
  readonly #since = new Map<string, { etag: string; since: number }>();

  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * The answer to a request for `card` under `key` (which agent, which revision was asked, which
   * origin), given the request's conditions; `vary` names the headers the answer varies by.
   */
  answer(key: string, card: unknown, request: CardConditions & { vary: string }): CardAnswer {
    const { vary } = request;
    const conditions: CardConditions = { ifNoneMatch: request.ifNoneMatch, ifModifiedSince: request.ifModifiedSince };
    const body = JSON.stringify(card);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const since = this.#sinceOf(key, etag);
    const headers: Record<string, string> = {
      'cache-control': `public, max-age=${CARD_MAX_AGE_SECONDS}`,
      etag,
      'last-modified': new Date(since).toUTCString(),
      vary,
    };
    if (isFresh(conditions, etag, since)) return { status: 304, headers, body: undefined };
    return { status: 200, headers: { ...headers, 'content-type': 'application/json' }, body };
  }

  #sinceOf(key: string, etag: string): number {
    const known = this.#since.get(key);
    if (known?.etag === etag) return known.since;
    // HTTP dates have whole seconds: a Last-Modified in the future of the If-Modified-Since a client echoes would never match.
    const since = Math.floor(this.#now() / 1000) * 1000;
    this.#since.delete(key);
    if (this.#since.size >= MAX_REMEMBERED) {
      const oldest = this.#since.keys().next().value;
      if (oldest !== undefined) this.#since.delete(oldest);
    }
    this.#since.set(key, { etag, since });
    return since;
  }
}

/** Whether the client's copy is current: `If-None-Match` (weak comparison, `*`), else `If-Modified-Since`. */
function isFresh(conditions: CardConditions, etag: string, since: number): boolean {
  if (conditions.ifNoneMatch !== undefined) {
    return conditions.ifNoneMatch
      .split(',')
      .map((entry) => entry.trim().replace(/^W\//, ''))
      .some((entry) => entry === '*' || entry === etag);
  }
  if (conditions.ifModifiedSince !== undefined) {
    const date = Date.parse(conditions.ifModifiedSince);
    return !Number.isNaN(date) && since <= date;
  }
  return false;
}
