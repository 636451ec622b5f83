/**
 * The address guard of push-notification webhooks: the web tools' guard (`net-guard.ts`, the
 * one `web_fetch` uses), with `[a2a].push_allow_private_network` in place of a `net_connect`
 * grant. The host is resolved once, every address is judged, and the delivery is then pinned to
 * those addresses (`requestPinned`), so a DNS answer that changes later cannot move it.
 */
import { type HostResolver, type VettedAddress, vetHostAddresses } from '../tools/index.ts';
import { PushWebhookRefusedError } from './push-webhook-refused-error.ts';

/** The config switch that lets webhooks on private and loopback addresses through. */
export const PUSH_PRIVATE_NETWORK_SWITCH = '[a2a].push_allow_private_network = true';

/** A webhook URL that passed the guard, with the addresses its host resolved to. */
export interface VettedWebhook {
  url: URL;
  addresses: VettedAddress[];
}

/** How {@link vetWebhookUrl} resolves and judges. */
export interface VetWebhookOptions {
  allowPrivateNetwork: boolean;
  /** The system resolver unless a test injects another. */
  resolve?: HostResolver | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Parses a webhook URL without resolving it: absolute, http or https, no user name or password
 * (which would be sent to the webhook in the clear). Throws PushWebhookRefusedError naming it.
 */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new PushWebhookRefusedError(`push-notification URL "${text}" is refused: not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PushWebhookRefusedError(`push-notification URL "${text}" is refused: only http and https URLs are supported, not "${url.protocol}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new PushWebhookRefusedError(
      `push-notification URL "${url.origin}" is refused: URLs with a user name or password are not supported; give a token or authentication instead`,
    );
  }
  return url;
}

/**
 * Checks a webhook URL: parsed as {@link parseWebhookUrl}; never a cloud-metadata host or
 * address; no loopback, private, link-local or unspecified address unless `allowPrivateNetwork`.
 * Returns every address the host resolved to, for the delivery to be pinned to.
 * @throws {PushWebhookRefusedError} naming the URL, the address and why.
 * @throws {WebRequestError} when the host cannot be resolved.
 */
export async function vetWebhookUrl(text: string, options: VetWebhookOptions): Promise<VettedWebhook> {
  const url = parseWebhookUrl(text);
  const refuse = (why: string, address?: string): PushWebhookRefusedError =>
    new PushWebhookRefusedError(`push-notification URL ${url.origin} is refused: ${why}`, {
      details: { url: url.origin, ...(address === undefined ? {} : { address }) },
    });
  const vetted = await vetHostAddresses(url, options.allowPrivateNetwork, options);
  if ('addresses' in vetted) return { url, addresses: vetted.addresses };
  const { refused } = vetted;
  if (refused.kind === 'metadata-host') throw refuse(`"${refused.host}" is a cloud metadata host`);
  const resolved = refused.address === refused.host ? '' : ` ("${refused.host}" resolves to ${refused.address})`;
  if (refused.reason === 'cloud metadata') throw refuse(`cloud metadata addresses are never called${resolved}`, refused.address);
  throw refuse(`${refused.reason} addresses are refused${resolved}; set ${PUSH_PRIVATE_NETWORK_SWITCH} in config.toml to allow them`, refused.address);
}
