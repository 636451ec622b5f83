import { matchesPattern, patternCovers } from './pattern.ts';

/**
 * `net_connect` values are `host` or `host:port`, IPv6 in brackets (`[::1]:443`), as
 * `URL#host` writes them. Hosts compare case-insensitively with a trailing dot ignored. A
 * pattern without a port (or with port `*`) allows every port of the hosts it matches; a
 * pattern with a port allows that port only.
 */

/** A parsed address or pattern; `port` undefined means "any port" in a pattern, "none given" in a value. */
interface NetAddress {
  host: string;
  port: number | undefined;
}

const HOST_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const IPV6_HOST = /^[0-9a-f:.]+$/;
const PORT = /^[0-9]{1,5}$/;
/** The characters a pattern's host may hold: a value's, plus `*`. */
const PATTERN_NAME_CHARACTER = /[a-z0-9_.*-]/;
const PATTERN_IPV6_CHARACTER = /[0-9a-f:.*]/;

/**
 * A value to connect to, or `undefined` when it is not a plain host or host and port. Host
 * names are held to the characters DNS names use, so a caller that passes a URL fragment such as
 * `evil.com/x.openai.com` is denied rather than matched against `*.openai.com`.
 */
function parseNetValue(value: string): NetAddress | undefined {
  const address = splitHostPort(value, false);
  if (typeof address === 'string') {
    return undefined;
  }
  const isValidHost = address.host.includes(':') ? IPV6_HOST.test(address.host) : HOST_NAME.test(address.host);
  return isValidHost ? address : undefined;
}

/**
 * A pattern, or why it is malformed (a parenthesised reason for `netPatternProblem`). Its host
 * holds only what a value's host may hold, plus `*`: a pattern that no value could match is a
 * mistake to report, not a grant.
 */
function parseNetPattern(pattern: string): NetAddress | string {
  if (pattern.includes('://')) {
    return 'a URL; write the host alone, e.g. "api.openai.com"';
  }
  if (/^[0-9a-f:.[\]]+\/[0-9]+$/i.test(pattern)) {
    return 'CIDR ranges are not supported; list the hosts or addresses, or "*" for any';
  }
  if (pattern.includes('/')) {
    return '"/" has no place in a host; write the host alone';
  }
  const address = splitHostPort(pattern, true);
  if (typeof address === 'string') {
    return address;
  }
  const isIpv6 = pattern.startsWith('[') || address.host.includes(':');
  const allowed = isIpv6 ? PATTERN_IPV6_CHARACTER : PATTERN_NAME_CHARACTER;
  const stray = [...address.host].find((character) => !allowed.test(character));
  if (stray === undefined) {
    return address;
  }
  if (isIpv6) {
    return `"${address.host}"${pattern.startsWith('[') ? ' in brackets' : ''} is not an IPv6 address`;
  }
  const advice = stray.charCodeAt(0) > 0x7f ? '; write international names in punycode ("xn--…")' : ', which no host name holds';
  return `host "${address.host}" holds ${JSON.stringify(stray)}${advice}`;
}

/** The host and port of `text`, or why they cannot be read. Hosts come back lower case, without a trailing dot. */
function splitHostPort(text: string, allowAnyPort: boolean): NetAddress | string {
  let host: string;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) {
      return 'unclosed "["';
    }
    host = text.slice(1, end);
    const rest = text.slice(end + 1);
    if (rest !== '' && !rest.startsWith(':')) {
      return `unexpected ${JSON.stringify(rest)} after "]"`;
    }
    portText = rest === '' ? undefined : rest.slice(1);
  } else {
    const firstColon = text.indexOf(':');
    // More than one colon without brackets is a bare IPv6 address, which cannot carry a port.
    const hasPort = firstColon >= 0 && text.indexOf(':', firstColon + 1) < 0;
    host = hasPort ? text.slice(0, firstColon) : text;
    portText = hasPort ? text.slice(firstColon + 1) : undefined;
  }
  host = host.toLowerCase();
  if (host.endsWith('.')) {
    host = host.slice(0, -1);
  }
  if (host === '') {
    return 'empty host';
  }
  if (portText === undefined || (allowAnyPort && portText === '*')) {
    return { host, port: undefined };
  }
  const port = PORT.test(portText) ? Number(portText) : 0;
  return port >= 1 && port <= 65_535 ? { host, port } : `port ${JSON.stringify(portText)} is not a number from 1 to 65535${allowAnyPort ? ' or "*"' : ''}`;
}

/**
 * What is wrong with a `net_connect` pattern, for a message, or `undefined` when it is a host
 * glob, optionally with a port or `*` (`api.openai.com`, `*.example.com:443`, `[::1]:8080`,
 * `*`). CIDR ranges are refused: they would match only addresses written as IP literals, and
 * a grant without `*` counts as naming its addresses explicitly (which opens private ones).
 *
 * @example
 * ```ts
 * netPatternProblem('[::1'); // 'expected a host such as "api.openai.com" or "*.example.com:443", got "[::1" (unclosed "[")'
 * ```
 */
export function netPatternProblem(pattern: string): string | undefined {
  const parsed = parseNetPattern(pattern);
  return typeof parsed === 'string' ? `expected a host such as "api.openai.com" or "*.example.com:443", got ${JSON.stringify(pattern)} (${parsed})` : undefined;
}

/**
 * Whether the address `value` matches the `net_connect` `pattern`. A value without a port
 * matches only patterns that allow every port: the port it will end up using is unknown here.
 */
export function matchesNetAddress(pattern: string, value: string): boolean {
  const wanted = parseNetPattern(pattern);
  const address = parseNetValue(value);
  if (typeof wanted === 'string' || address === undefined) {
    return false;
  }
  return (wanted.port === undefined || wanted.port === address.port) && matchesPattern(wanted.host, address.host);
}

/** Whether the `net_connect` pattern `wider` allows every address `narrower` allows, ports included. */
export function netPatternCovers(wider: string, narrower: string): boolean {
  const outer = parseNetPattern(wider);
  const inner = parseNetPattern(narrower);
  if (typeof outer === 'string' || typeof inner === 'string') {
    return false;
  }
  return (outer.port === undefined || outer.port === inner.port) && patternCovers(outer.host, inner.host);
}
