import { domainToASCII } from 'node:url';
import { ImapFlow } from 'imapflow';
import type { DNSResolver } from 'mailauth';
// The DKIM verifier alone, not the package's index (which loads SPF, ARC, BIMI and VMC too).
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { createTransport } from 'nodemailer';
import { isLoopbackBind } from '../access/index.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import type { ChannelAdapter, ChannelState, InboundSink, ReplyTarget } from './channel-adapter.ts';

/** The longest reply one email carries (longer ones go as several). */
const EMAIL_MAX_LENGTH = 100_000;

/** What a reply in an email thread needs of the thread: its subject and the message it answers. */
interface ThreadInfo {
  subject: string;
  lastMessageId: string;
  references: string[];
}

/**
 * How many threads' state is kept, the oldest dropped first: a reply in a dropped thread goes out
 * as "Re: your message" without References, where keeping every thread anyone ever started (a
 * stranger's mail too, before the policy refuses it) would grow without bound.
 */
const MAX_THREADS = 10_000;

/** Where an email thread's state is kept: per sender (the conversation) and root `Message-ID`. */
function threadKey(sender: string, root: string): string {
  return `${sender}\u0000${root}`;
}

/** An email's own words: the quoted message it replies to cut off (`> …`, "On … wrote:"). */
export function newText(text: string): string {
  const lines = text.replaceAll('\r\n', '\n').split('\n');
  const cut = lines.findIndex((line) => line.startsWith('>') || /^On .+wrote:\s*$/.test(line.trim()));
  return (cut === -1 ? lines : lines.slice(0, cut)).join('\n').trim();
}

/** A domain as DNS spells it: lower case, internationalized labels in A-labels (`xn--…`). */
function asciiDomain(domain: string): string {
  return domainToASCII(domain.trim().replace(/\.$/, '')) || domain.trim().toLowerCase();
}

/**
 * Why a message cannot be taken as from `sender` (its From address), or `null` when it can: it
 * carries a DKIM signature that verifies (RSA-SHA1 and keys in testing mode do not count, nor one
 * leaving part of the body unsigned with `l=`) and whose signing domain (`d=`) is the From
 * address's domain or a domain above it (DMARC's relaxed alignment). Never throws: a check that
 * fails is a reason. `retry` when an aligned signature could not be checked for now (its key's DNS
 * lookup failed: `temperror`): the mail is left for the next poll rather than refused for good.
 */
async function senderDoubt(
  source: Buffer,
  sender: string,
  options: { resolver: DNSResolver | undefined; now: number },
): Promise<{ reason: string; retry: boolean } | null> {
  let retry = false;
  const doubt = (why: string): { reason: string; retry: boolean } => ({ reason: `the sender "${sender}" could not be verified: ${why}`, retry });
  const domain = asciiDomain(sender.slice(sender.lastIndexOf('@') + 1));
  let result: Awaited<ReturnType<typeof dkimVerify>>;
  try {
    result = await dkimVerify(source, {
      ...(options.resolver === undefined ? {} : { resolver: options.resolver }),
      curTime: new Date(options.now),
      rejectRsaSha1: true,
    });
  } catch (caught) {
    return doubt(`the DKIM check failed: ${caught instanceof Error ? caught.message : String(caught)}`);
  }
  // A second From field or address could be the one a reader is shown, not the one signed.
  if (result.fromFields !== 1 || result.headerFrom.length !== 1)
    return doubt(`the message has ${result.fromFields} From fields with ${result.headerFrom.length} addresses; only a single From address can be verified`);
  if (result.headerFrom[0]?.toLowerCase() !== sender) return doubt(`its From field reads "${result.headerFrom[0] ?? ''}" to the DKIM check`);
  const found: string[] = [];
  for (const signature of result.results) {
    // An entry without a signing domain stands for "not signed" (or a signature too broken to name one).
    if (typeof signature.signingDomain !== 'string' || signature.signingDomain === '') continue;
    const signer = asciiDomain(signature.signingDomain);
    const { status } = signature;
    const aligned = domain === signer || domain.endsWith(`.${signer}`);
    if (status.result === 'temperror' && aligned) retry = true;
    if (status.result !== 'pass')
      found.push(`${signer}'s signature is ${status.result}${status.comment === undefined || status.comment === '' ? '' : ` (${status.comment})`}`);
    else if (!aligned) found.push(`a signature from ${signer}, which is not ${domain} or a domain above it`);
    else if ((status.underSized ?? 0) > 0) found.push(`${signer}'s signature leaves ${status.underSized} bytes of the body unsigned (l=)`);
    else if (status.testing === true) found.push(`${signer}'s key is in testing mode (t=y)`);
    else return null;
  }
  return doubt(`no valid DKIM signature from ${domain}: ${found.length === 0 ? 'the message is not signed' : found.join('; ')}`);
}

export interface EmailChannelOptions {
  name: string;
  /** The agent's address: replies come from it, mail from it is never answered. */
  address: string;
  /** `secure`: TLS from the start; otherwise STARTTLS, required unless `host` is loopback. */
  imap: { host: string; port: number; secure: boolean };
  smtp: { host: string; port: number; secure: boolean };
  user: string;
  password: string;
  mailbox: string;
  pollMs: number;
  /**
   * `dkim`: mail is taken as from its From address only when a DKIM signature of that address's
   * domain (or a domain above it) verifies; other mail is not answered, and `onRefused` is told.
   * `none`: the From header is believed (anyone can write it).
   */
  senderCheck: 'dkim' | 'none';
  /** Looks up DKIM keys (TXT records): Node's `dns.promises.resolve` unless a test injects another. */
  resolver?: DNSResolver;
  /** Told of each message not taken in because its sender could not be verified (the service audits it). */
  onRefused: (user: { id: string; name: string | null }, reason: string) => Promise<void>;
  clock: Clock;
  logger: Logger;
}

/**
 * Email: new mail read over IMAP with ImapFlow (polled on the kernel's clock), replies sent over
 * SMTP with Nodemailer, in the same thread (`In-Reply-To`, `References`, "Re:"). A message is
 * marked `\Seen` only once it is stored, so one that could not be is read again at the next
 * poll; its `Message-ID` makes a second copy answered once. Each correspondent is a
 * conversation, each email thread within it one session. Mail from the agent's own address and
 * automatic replies (`Auto-Submitted`) are never answered, so two agents cannot loop. With
 * `senderCheck: 'dkim'` (the default in config) the From address must be vouched for by a DKIM
 * signature of its domain; mail that is not is marked seen without an answer (which would go to
 * the real owner of a forged address) and handed to `onRefused`.
 */
export function createEmailChannel(options: EmailChannelOptions): ChannelAdapter {
  const { name, address, clock, logger } = options;
  const transport = createTransport({
    host: options.smtp.host,
    port: options.smtp.port,
    secure: options.smtp.secure,
    requireTLS: !options.smtp.secure && !isLoopbackBind(options.smtp.host),
    auth: { user: options.user, pass: options.password },
  });
  /**
   * `threadKey(sender, root)` → the thread as that sender last wrote in it. Not keyed by root
   * alone: a root id is in every copy of the thread, and anyone's mail naming it (a stranger's the
   * policy refuses) must not set the Subject and References of the reply to another sender.
   */
  const threads = new Map<string, ThreadInfo>();
  const stopping = new AbortController();
  let state: ChannelState = 'stopped';
  let error: string | null = null;
  let imap: ImapFlow | undefined;
  let loop: Promise<void> | undefined;

  const connect = async (): Promise<ImapFlow> => {
    const client = new ImapFlow({
      host: options.imap.host,
      port: options.imap.port,
      secure: options.imap.secure,
      // The password never goes in clear to another machine.
      ...(options.imap.secure || isLoopbackBind(options.imap.host) ? {} : { doSTARTTLS: true }),
      auth: { user: options.user, pass: options.password },
      logger: false,
      disableAutoIdle: true,
    });
    client.on('error', (caught: Error) => {
      error = caught.message;
    });
    await client.connect();
    return client;
  };

  /** Reads the mailbox's unseen mail into `sink`, marking each seen once stored. */
  async function poll(sink: InboundSink): Promise<void> {
    imap ??= await connect();
    const client = imap;
    const lock = await client.getMailboxLock(options.mailbox);
    try {
      const uids = (await client.search({ seen: false }, { uid: true })) || [];
      for (const uid of uids) {
        const fetched = await client.fetchOne(String(uid), { source: true, uid: true }, { uid: true });
        if (fetched === false || fetched.source === undefined) continue;
        const mail = await simpleParser(fetched.source);
        const from = mail.from?.value[0];
        const sender = from?.address?.toLowerCase();
        const submitted = mail.headers.get('auto-submitted');
        const automatic = typeof submitted === 'string' && submitted.toLowerCase() !== 'no';
        const text = newText(mail.text ?? '');
        if (sender !== undefined && sender !== address.toLowerCase() && !automatic && text !== '') {
          const user = { id: sender, name: from?.name === undefined || from.name === '' ? null : from.name };
          const doubt = options.senderCheck === 'dkim' ? await senderDoubt(fetched.source, sender, { resolver: options.resolver, now: clock.now() }) : null;
          if (doubt === null) {
            const messageId = mail.messageId ?? `<uid-${uid}@${name}>`;
            const references = typeof mail.references === 'string' ? [mail.references] : (mail.references ?? []);
            const root = references[0] ?? mail.inReplyTo ?? messageId;
            // Latest last, so the oldest threads go first once there are too many (anyone can write).
            const key = threadKey(sender, root);
            threads.delete(key);
            threads.set(key, { subject: mail.subject ?? '', lastMessageId: messageId, references: [...references, messageId] });
            for (const oldest of threads.keys()) {
              if (threads.size <= MAX_THREADS) break;
              threads.delete(oldest);
            }
            await sink({ platformId: messageId, user, conversation: { id: sender, kind: 'direct', thread: root }, mentioned: true, text });
          } else if (doubt.retry) {
            // Its key could not be looked up for now: read again at the next poll, neither taken nor refused.
            logger.warn({ channel: name, sender, reason: doubt.reason }, `channel "${name}": a message waits for its sender to be verified: ${doubt.reason}`);
            continue;
          } else {
            logger.info({ channel: name, sender, reason: doubt.reason }, `channel "${name}": a message was not answered: ${doubt.reason}`);
            await options.onRefused(user, doubt.reason);
          }
        }
        await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true });
      }
    } finally {
      lock.release();
    }
  }

  return {
    kind: 'email',
    maxMessageLength: EMAIL_MAX_LENGTH,

    async start(sink) {
      try {
        await poll(sink);
      } catch (caught) {
        throw new Error(`channel "${name}": the mailbox could not be read: ${caught instanceof Error ? caught.message : String(caught)}`, { cause: caught });
      }
      state = 'connected';
      loop = (async () => {
        while (!stopping.signal.aborted) {
          try {
            await clock.sleep(options.pollMs, { signal: stopping.signal });
          } catch {
            return;
          }
          try {
            await poll(sink);
            state = 'connected';
            error = null;
          } catch (caught) {
            // The connection is dropped and made again at the next poll.
            state = 'reconnecting';
            error = caught instanceof Error ? caught.message : String(caught);
            logger.warn({ err: caught, channel: name }, `channel "${name}": the mailbox could not be read; trying again at the next poll`);
            const broken = imap;
            imap = undefined;
            await broken?.logout().catch(() => undefined);
          }
        }
      })();
    },

    async stop() {
      state = 'stopped';
      stopping.abort();
      await loop;
      await imap?.logout().catch(() => undefined);
      transport.close();
    },

    // SMTP's 5xx replies are permanent failures (the mailbox unknown, the message refused); 4xx ones are worth trying again.
    refusedForGood: (error) =>
      typeof error === 'object' && error !== null && 'responseCode' in error && typeof error.responseCode === 'number' && error.responseCode >= 500,

    async send(target: ReplyTarget, text: string) {
      // A conversation is its sender's address: the thread as they wrote in it, not as anyone else did.
      const thread = target.thread === null ? undefined : threads.get(threadKey(target.conversationId, target.thread));
      const subject = thread === undefined ? 'Re: your message' : /^re:/i.test(thread.subject) ? thread.subject : `Re: ${thread.subject}`;
      const sent = await transport.sendMail({
        from: address,
        to: target.conversationId,
        subject,
        text,
        ...(thread === undefined
          ? target.thread === null
            ? {}
            : { inReplyTo: target.thread, references: [target.thread] }
          : { inReplyTo: thread.lastMessageId, references: thread.references }),
      });
      return { messageId: String(sent.messageId) };
    },

    state: () => ({ state, error }),
  };
}
