/**
 * The SSRF guard of the web tools. A URL's host is resolved once, every address it resolves to
 * is judged, and the connection is then made to those vetted addresses only (see
 * `pinnedLookup`), so a DNS answer that changes between the check and the connect (DNS
 * rebinding) cannot move the request to an address that was never checked.
 *
 * Refused unless a `net_connect` grant names the host or the address exactly (no `*` in its
 * host part): loopback, private, link-local, unspecified and cloud-metadata addresses. IPv4
 * addresses written as IPv6 (`::ffff:127.0.0.1`) are judged as the IPv4 address they carry.
 *
 * The MCP client judges its servers' addresses by its own rule (`allow_private_network`) and
 * connects through the same `resolveHost`, `pinnedLookup` and `requestPinned`.
 */
import { lookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { isGranted } from '../../capabilities/index.ts';
import type { Capability } from '../../contracts/index.ts';
import { UsageError } from '../../errors/index.ts';
import { NetAddressRefusedError } from './net-address-refused-error.ts';
import { WebRequestError } from './web-request-error.ts';

/** Why an address is refused by default. */
export type BlockedAddressReason = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'reserved' | 'cloud metadata';

/** Host names of cloud metadata services, refused like their addresses. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog']);
/** Addresses of cloud metadata services (AWS, GCP, Azure, OpenStack; AWS IPv6; Alibaba). */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200']);

const RANGES: readonly (readonly [BlockedAddressReason, string, number, 'ipv4' | 'ipv6'])[] = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  // Carrier-grade NAT (also Tailscale's tailnets), and the benchmarking range: not the internet.
  ['private', '100.64.0.0', 10, 'ipv4'],
  ['private', '198.18.0.0', 15, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  // Multicast, the reserved block and broadcast.
  ['reserved', '224.0.0.0', 3, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  // Site-local (deprecated, still routed on some networks) and multicast.
  ['private', 'fec0::', 10, 'ipv6'],
  ['reserved', 'ff00::', 8, 'ipv6'],
];

const BLOCK_LISTS: readonly (readonly [BlockedAddressReason, BlockList])[] = RANGES.map(([reason, network, prefix, family]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return [reason, list] as const;
});

/** An address a connection may be made to, after the guard has judged it. */
export interface VettedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has; `systemResolver` (`dns.lookup`) unless a test injects another. */
export type HostResolver = (host: string) => Promise<readonly LookupAddress[]>;

/** The operating system's resolver (`dns.lookup`, all addresses, in the order it gives them). */
export const systemResolver: HostResolver = (host) => lookup(host, { all: true, order: 'verbatim' });

/**
 * Parses a URL the web tools may fetch: absolute, `http:` or `https:`, no user name or password.
 * Throws a UsageError naming the URL otherwise.
 */
export function parseWebUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`cannot fetch "${text}": not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`cannot fetch "${text}": only http and https URLs are supported, not "${url.protocol}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UsageError(`cannot fetch "${url.origin}": URLs with a user name or password are not supported; send an authorization header instead`);
  }
  return url;
}

/** The `host:port` a URL connects to, as `net_connect` names it (`[::1]:443` for IPv6), port defaulted to 80/443. */
export function netConnectTarget(url: URL): string {
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return `${url.hostname}:${port}`;
}

/** The `net_connect` capability a request to `url` needs. */
export function netConnectFor(url: URL): Capability {
  return { kind: 'net_connect', pattern: netConnectTarget(url) };
}

/** Why `address` (an IP address, without brackets) is refused by default, or undefined when it is not. */
export function blockedAddressReason(address: string): BlockedAddressReason | undefined {
  const family = isIP(address);
  if (family === 0) {
    return undefined;
  }
  const normalised = address.toLowerCase();
  if (family === 6) {
    const mapped = mappedIpv4(normalised);
    if (mapped !== undefined) {
      return blockedAddressReason(mapped);
    }
  }
  if (METADATA_ADDRESSES.has(normalised) || (family === 6 && sameIpv6(normalised, 'fd00:ec2::254'))) {
    return 'cloud metadata';
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [reason, list] of BLOCK_LISTS) {
    if (list.check(normalised, type)) {
      return reason;
    }
  }
  return undefined;
}

/** Whether `host` (lower case, no trailing dot) is the name of a cloud metadata service. */
export function isMetadataHost(host: string): boolean {
  return METADATA_HOSTS.has(host.toLowerCase().replace(/\.$/, ''));
}

/**
 * Whether one of `granted`'s `net_connect` grants names `host` (a name, an IPv4 address or a
 * bracketed IPv6 address) at `port` exactly: a grant whose host part holds a `*` does not count,
 * so `*` or `127.0.0.*` never opens loopback, while `127.0.0.1` or `127.0.0.1:8080` does.
 */
export function namesExplicitly(granted: readonly Capability[], host: string, port: number): boolean {
  return granted.some(
    (capability) =>
      capability.kind === 'net_connect' &&
      !hostPart(capability.pattern).includes('*') &&
      isGranted([capability], { kind: 'net_connect', pattern: `${host}:${port}` }),
  );
}

/**
 * Resolves `url`'s host (all addresses) and returns them once every one is allowed. Throws a
 * NetAddressRefusedError naming the host, the address and why, when one is refused and no grant
 * names it; a WebRequestError when the host cannot be resolved or `signal` aborts.
 */
export async function vetDestination(url: URL, granted: readonly Capability[], signal: AbortSignal): Promise<VettedAddress[]> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const hostNamed = namesExplicitly(granted, url.hostname, port);
  const fix = `grant net_connect "${netConnectTarget(url)}" explicitly (no wildcard) to allow it`;
  if (isMetadataHost(host) && !hostNamed) {
    throw new NetAddressRefusedError(`cannot connect to "${host}": it is a cloud metadata host; ${fix}`, { details: { host, reason: 'cloud metadata' } });
  }
  const addresses = await resolveHost(host, signal);
  if (!hostNamed) {
    for (const { address, family } of addresses) {
      const reason = blockedAddressReason(address);
      const addressHost = family === 6 ? `[${address}]` : address;
      if (reason !== undefined && !namesExplicitly(granted, addressHost, port)) {
        const resolved = address === host ? '' : ` (it resolves to ${address})`;
        throw new NetAddressRefusedError(`cannot connect to "${host}"${resolved}: ${reason} addresses are refused; ${fix}`, {
          details: { host, address, reason },
        });
      }
    }
  }
  return addresses;
}

/**
 * A `lookup` for `http.request` that answers with the vetted addresses only, whatever the host
 * name, so the socket connects to exactly what `vetDestination` checked.
 */
export function pinnedLookup(addresses: readonly VettedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const first = addresses[0];
    if (first === undefined) {
      callback(new Error('no vetted address'), '', 0);
    } else if (options.all === true) {
      callback(
        null,
        addresses.map((entry): LookupAddress => ({ address: entry.address, family: entry.family })),
      );
    } else {
      callback(null, first.address, first.family);
    }
  };
}

/** What {@link requestPinned} sends. */
export interface PinnedRequestOptions {
  method: string;
  headers: Readonly<Record<string, string>>;
  body?: string | Uint8Array | undefined;
  /** The addresses the check approved for the URL's host; the socket connects to one of these only. */
  addresses: readonly VettedAddress[];
  signal?: AbortSignal | undefined;
  /**
   * A connection pool used for this destination only, so every pooled socket went to a vetted
   * address. Without one, every request opens a fresh socket.
   */
  agent?: http.Agent | undefined;
}

/**
 * Sends one request to `url` over a socket pinned to `options.addresses` (whatever the host
 * name resolves to by then), and resolves with the response head. The URL's host name is kept
 * for the `Host` header and for TLS, so the certificate is still verified against the name.
 * Redirects are not followed. Rejects with the socket's error, or the signal's on abort.
 */
export function requestPinned(url: URL, options: PinnedRequestOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    // Never the global agent: without the caller's own pool, a fresh socket, so no pooled
    // connection made elsewhere (to an address this guard never saw) is reused for this host.
    // An explicit length: Node sends a GET or DELETE body without one otherwise, which servers reject.
    const headers = options.body === undefined ? options.headers : { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) };
    const request = client.request(
      url,
      {
        method: options.method,
        headers,
        lookup: pinnedLookup(options.addresses),
        agent: options.agent ?? false,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
      resolve,
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/**
 * Resolves `host` (every address; a literal address is itself) with `resolver`. Throws a
 * WebRequestError naming the host when it cannot be resolved, or the signal's reason on abort.
 */
export async function resolveHost(host: string, signal: AbortSignal, resolver: HostResolver = systemResolver): Promise<VettedAddress[]> {
  const literal = isIP(host);
  if (literal !== 0) {
    return [{ address: host, family: literal === 4 ? 4 : 6 }];
  }
  signal.throwIfAborted();
  // dns.lookup takes no signal; the race lets an abort end the wait (the lookup itself finishes in the background).
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const found = await Promise.race([resolver(host), aborted]);
    if (found.length === 0) {
      throw new WebRequestError(`cannot resolve host "${host}": no addresses`);
    }
    return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
  } catch (error) {
    if (error instanceof WebRequestError || signal.aborted) {
      throw error;
    }
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new WebRequestError(`cannot resolve host "${host}": ${code}`, { cause: error, details: { host } });
  } finally {
    if (onAbort !== undefined) {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

function hostPart(pattern: string): string {
  if (pattern.startsWith('[')) {
    const end = pattern.indexOf(']');
    return end < 0 ? pattern : pattern.slice(0, end + 1);
  }
  const firstColon = pattern.indexOf(':');
  const hasPort = firstColon >= 0 && pattern.indexOf(':', firstColon + 1) < 0;
  return hasPort ? pattern.slice(0, firstColon) : pattern;
}

/** The eight 16-bit groups of an IPv6 address, or undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address;
  const tail: number[] = [];
  const dotted = /:(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    tail.push(((a ?? 0) << 8) | (b ?? 0), ((c ?? 0) << 8) | (d ?? 0));
    // Keep the colon before the dotted part when it is the second of a `::`.
    text = text.slice(0, text.endsWith(`::${dotted[0].slice(1)}`) ? dotted.index + 1 : dotted.index);
  }
  const halves = text.split('::');
  if (halves.length > 2) {
    return undefined;
  }
  const parse = (part: string | undefined): number[] => (part === undefined || part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const missing = 8 - head.length - rest.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) {
    return undefined;
  }
  return [...head, ...new Array<number>(missing).fill(0), ...rest, ...tail];
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) carries, or undefined. */
/**
 * The IPv4 address an IPv6 address carries, judged as that address: IPv4-mapped (`::ffff:a.b.c.d`),
 * IPv4-compatible (`::a.b.c.d`, not `::` or `::1`), IPv4-translated (`::ffff:0:a.b.c.d`), NAT64
 * (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
 */
function mappedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (groups?.length !== 8) return undefined;
  const zero = (from: number, to: number): boolean => groups.slice(from, to).every((group) => group === 0);
  const ipv4 = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const [first = 0, second = 0, third = 0] = groups;
  const high = groups[6] ?? 0;
  const low = groups[7] ?? 0;
  if (zero(0, 5) && groups[5] === 0xffff) return ipv4(high, low);
  if (zero(0, 6) && high !== 0) return ipv4(high, low);
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) return ipv4(high, low);
  if (first === 0x64 && second === 0xff9b && zero(2, 6)) return ipv4(high, low);
  if (first === 0x2002) return ipv4(second, third);
  return undefined;
}

function sameIpv6(left: string, right: string): boolean {
  const a = ipv6Groups(left);
  const b = ipv6Groups(right);
  return a !== undefined && b !== undefined && a.every((group, index) => group === b[index]);
}

/** Why a server-chosen URL's host is refused: a cloud-metadata name, or an address it resolves to. */
export type HostRefusal = { kind: 'metadata-host'; host: string } | { kind: 'address'; host: string; address: string; reason: BlockedAddressReason };

/**
 * Resolves the host of a URL Loom was handed (an MCP server's, a push webhook's) and judges every
 * address: a cloud-metadata host or address is always refused, loopback, private, link-local and
 * unspecified ones unless `allowPrivate`. The addresses to pin the connection to, or the first
 * refusal for the caller to word. Throws a WebRequestError when the host cannot be resolved.
 */
export async function vetHostAddresses(
  url: URL,
  allowPrivate: boolean,
  options: { resolve?: HostResolver | undefined; signal?: AbortSignal | undefined },
): Promise<{ addresses: VettedAddress[] } | { refused: HostRefusal }> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isMetadataHost(host)) return { refused: { kind: 'metadata-host', host } };
  const addresses = await resolveHost(host, options.signal ?? new AbortController().signal, options.resolve);
  for (const { address } of addresses) {
    const reason = blockedAddressReason(address);
    if (reason === 'cloud metadata' || (reason !== undefined && !allowPrivate)) return { refused: { kind: 'address', host, address, reason } };
  }
  return { addresses };
}
