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

/**
 * A value to connect to, or `undefined` when it is not a plain host or host and port. Host
 * names are held to the characters DNS names use, so a caller that passes a URL fragment such as
 * `evil.com/x.openai.com` is denied rather than matched against `*.openai.com`.
 */
function parseNetValue(value: string): NetAddress | undefined {
  const address = splitHostPort(value, false);
  if (address === undefined) {
    return undefined;
  }
  const isValidHost = address.host.includes(':') ? IPV6_HOST.test(address.host) : HOST_NAME.test(address.host);
  return isValidHost ? address : undefined;
}

function parseNetPattern(pattern: string): NetAddress | undefined {
  return splitHostPort(pattern, true);
}

function splitHostPort(text: string, allowAnyPort: boolean): NetAddress | undefined {
  let host: string;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) {
      return undefined;
    }
    host = text.slice(1, end);
    const rest = text.slice(end + 1);
    if (rest !== '' && !rest.startsWith(':')) {
      return undefined;
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
    return undefined;
  }
  if (portText === undefined || (allowAnyPort && portText === '*')) {
    return { host, port: undefined };
  }
  const port = PORT.test(portText) ? Number(portText) : 0;
  return port >= 1 && port <= 65_535 ? { host, port } : undefined;
}

/**
 * Whether the address `value` matches the `net_connect` `pattern`. A value without a port
 * matches only patterns that allow every port: the port it will end up using is unknown here.
 */
export function matchesNetAddress(pattern: string, value: string): boolean {
  const wanted = parseNetPattern(pattern);
  const address = parseNetValue(value);
  if (wanted === undefined || address === undefined) {
    return false;
  }
  return (wanted.port === undefined || wanted.port === address.port) && matchesPattern(wanted.host, address.host);
}

/** Whether the `net_connect` pattern `wider` allows every address `narrower` allows, ports included. */
export function netPatternCovers(wider: string, narrower: string): boolean {
  const outer = parseNetPattern(wider);
  const inner = parseNetPattern(narrower);
  if (outer === undefined || inner === undefined) {
    return false;
  }
  return (outer.port === undefined || outer.port === inner.port) && patternCovers(outer.host, inner.host);
}
