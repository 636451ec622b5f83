/**
 * What every answer of the API, MCP and A2A carries (the dashboard's files carry their own, wider
 * policy): a browser opening one neither guesses another type for it, nor runs or loads anything
 * in it, nor lets another page frame it.
 */
export const API_SECURITY_HEADERS: readonly (readonly [string, string])[] = [
  ['x-content-type-options', 'nosniff'],
  ['content-security-policy', "default-src 'none'; frame-ancestors 'none'"],
  // For browsers that predate `frame-ancestors`.
  ['x-frame-options', 'DENY'],
];
