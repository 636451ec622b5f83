/**
 * The adapter of each kind of channel, made from its configuration and the credentials the
 * daemon's environment holds. Each platform's SDK is loaded with the first channel on it, so a
 * daemon without channels holds none.
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelAdapter } from './channel-adapter.ts';
import { auditRefused, type ChannelContext } from './channel-context.ts';

/** A mail server's address from its URL, the port by the scheme when the URL names none. */
function mailServer(url: string, ports: { secure: number; plain: number }): { host: string; port: number; secure: boolean } {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'imaps:' || parsed.protocol === 'smtps:';
  return { host: parsed.hostname, port: parsed.port === '' ? (secure ? ports.secure : ports.plain) : Number(parsed.port), secure };
}

/**
 * The channel's adapter, not started.
 * @throws {Error} naming the credential variable that is not set in the daemon's environment.
 */
export async function adapterOf(context: ChannelContext, config: ChannelConfig): Promise<ChannelAdapter> {
  const { options, logger } = context;
  const { clock } = options;
  /** The value of a channel's credential variable. @throws {Error} naming the variable when it is not set. */
  const credential = (variable: string): string => {
    const value = options.env[variable];
    if (value === undefined || value === '') throw new Error(`${variable} is not set in the daemon's environment`);
    return value;
  };
  switch (config.kind) {
    case 'webhook': {
      const { createWebhookChannel } = await import('./webhook-channel.ts');
      return createWebhookChannel({
        name: config.name,
        secret: credential(config.secret_env),
        replyUrl: config.reply_url,
        maxSkewSeconds: config.max_skew_seconds,
        clock,
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
    }
    case 'telegram': {
      const { createTelegramChannel } = await import('./telegram-channel.ts');
      return createTelegramChannel({
        name: config.name,
        token: credential(config.token_env),
        apiBaseUrl: config.api_base_url,
        ...(config.mode === 'webhook' ? { webhook: { url: config.webhook_url ?? '', secretToken: credential(config.secret_token_env ?? '') } } : {}),
        logger,
      });
    }
    case 'discord': {
      const { createDiscordChannel } = await import('./discord-channel.ts');
      return createDiscordChannel({ name: config.name, token: credential(config.token_env), apiBaseUrl: config.api_base_url, logger });
    }
    case 'email': {
      const { createEmailChannel } = await import('./email-channel.ts');
      return createEmailChannel({
        name: config.name,
        address: config.address,
        imap: mailServer(config.imap_url, { secure: 993, plain: 143 }),
        smtp: mailServer(config.smtp_url, { secure: 465, plain: 587 }),
        user: credential(config.user_env),
        password: credential(config.password_env),
        mailbox: config.mailbox,
        pollMs: config.poll_seconds * 1000,
        senderCheck: config.sender_check,
        ...(options.resolveDns === undefined ? {} : { resolver: options.resolveDns }),
        // Not answered (the answer would go to whoever owns the forged address), only audited.
        onRefused: (user, reason) => auditRefused(context, { config, user, reason }),
        clock,
        logger,
      });
    }
    case 'slack': {
      const { createSlackChannel } = await import('./slack-channel.ts');
      return createSlackChannel({
        name: config.name,
        botToken: credential(config.bot_token_env),
        apiBaseUrl: config.api_base_url,
        receiver:
          config.mode === 'socket'
            ? { mode: 'socket', appToken: credential(config.app_token_env ?? '') }
            : { mode: 'events', signingSecret: credential(config.signing_secret_env ?? ''), clock },
        logger,
      });
    }
  }
}
