/** Rules of HTTP the daemon's servers (its API, MCP and A2A) apply alike to what they answer. */

/**
 * The method whose answer a request of `method` gets: a HEAD gets its GET's (without the body), so
 * a message naming the method names GET, and a HEAD's length is its GET's (RFC 9110 §8.6).
 */
export const answeredMethod = (method: string): string => (method === 'HEAD' ? 'GET' : method);

/** Whether `response` is a stream of Server-Sent Events (`text/event-stream`), which stays open and has no length. */
export const isEventStream = (response: { readonly headers: Headers }): boolean => (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
