import { z } from 'zod';
import { LOG_LEVELS } from '../logging/index.ts';
import { CATCH_UP_POLICIES, ManifestCapabilitiesSchema, ModelTargetSchema } from '../manifest/index.ts';
import { ModelPriceOverridesSchema } from '../models/index.ts';
import { trimTrailingSlashes } from '../validation/index.ts';

/** The name of an environment variable, where config.toml names one instead of holding its value. */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name' });

/** Whether `value` is a `postgres://` or `postgresql://` URL. */
export function isPostgresUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'postgres:' || protocol === 'postgresql:';
  } catch {
    return false;
  }
}

/** What a PostgreSQL URL is expected to look like, for errors (which never repeat the value: it may hold a password). */
export const POSTGRES_URL_EXPECTED = 'expected a postgres:// or postgresql:// URL such as "postgres://loom:password@db.example.com:5432/loom"';

/** `[store] url`: a refinement (a custom issue), so that the error does not echo a password back. */
/** What a sink does with a call carrying untrusted text. */
const TaintActionSchema = z.enum(['approve', 'refuse', 'off']);

const PostgresUrlSchema = z.string().refine(isPostgresUrl, { error: `${POSTGRES_URL_EXPECTED} (the value is not shown: it may hold a password)` });

/**
 * `[channels.policy]`: who may talk to the channel's agent, and how much. Deny by default: a
 * direct message from someone unknown gets a pairing code the owner approves; groups are closed.
 */
export const ChannelPolicySchema = z.strictObject({
  /** Direct messages: anyone, the allowlisted, the allowlisted and those the owner paired, nobody. */
  direct: z.enum(['open', 'allowlist', 'pairing', 'closed']).default('pairing'),
  /** Group conversations: any group, the allowlisted groups, none. */
  groups: z.enum(['open', 'allowlist', 'closed']).default('closed'),
  /** Platform user ids allowed in direct messages (and, when set, the only ones heard in groups). */
  allow_users: z.array(z.string().min(1)).default([]),
  /** Platform conversation ids of the groups allowed. */
  allow_groups: z.array(z.string().min(1)).default([]),
  /** In groups, answer only messages that mention the bot. */
  require_mention: z.boolean().default(true),
  /** Messages one person may send per minute; past it they are told to wait. */
  messages_per_minute: z.int().positive().default(10),
  /**
   * Platform user ids who may approve or deny the agent's tool calls from the chat (buttons on
   * Telegram, "approve <id>" elsewhere). None by default: approvals wait for the owner.
   */
  approvers: z.array(z.string().min(1)).default([]),
});

const channelName = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, { error: 'expected lowercase letters, digits, "_" or "-"' });

/** Fields of every channel: its name, the agent it serves, the policy. */
const channelFields = {
  name: channelName,
  /** The agent that answers on this channel (by name). */
  agent: z.string().min(1),
  policy: ChannelPolicySchema.prefault({}),
};

/** `[[channels]]`: a place people talk to an agent from (see docs/channels.md). */
export const ChannelConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    ...channelFields,
    kind: z.literal('webhook'),
    /** The shared secret signing both ways (HMAC-SHA256), by environment variable. */
    secret_env: EnvName,
    /** Where replies are POSTed, signed the same way. */
    reply_url: z.url({ protocol: /^https?$/ }),
    /** How far a request's timestamp may be from the daemon's clock (replays are refused). */
    max_skew_seconds: z.int().positive().default(300),
  }),
  z
    .strictObject({
      ...channelFields,
      kind: z.literal('telegram'),
      /** The bot token from @BotFather, by environment variable. */
      token_env: EnvName,
      /** The Bot API's base URL (a local Bot API server, or a test's). */
      api_base_url: z.url({ protocol: /^https?$/ }).default('https://api.telegram.org'),
      /** Long polling (no public address needed), or a webhook Telegram POSTs to. */
      mode: z.enum(['polling', 'webhook']).default('polling'),
      /** Webhook: the public HTTPS address of this channel's `/hooks/<name>`. */
      webhook_url: z.url({ protocol: /^https$/, error: 'expected the public https:// address of /hooks/<name>' }).optional(),
      /** Webhook: the secret Telegram sends with each update, by environment variable. */
      secret_token_env: EnvName.optional(),
    })
    .superRefine((channel, context) => {
      if (channel.mode !== 'webhook') return;
      if (channel.webhook_url === undefined)
        context.addIssue({ code: 'custom', path: ['webhook_url'], message: 'a webhook needs its public address: webhook_url' });
      if (channel.secret_token_env === undefined)
        context.addIssue({ code: 'custom', path: ['secret_token_env'], message: 'a webhook needs a secret Telegram sends with each update: secret_token_env' });
    }),
  z
    .strictObject({
      ...channelFields,
      kind: z.literal('slack'),
      /** How Slack reaches Loom: Socket Mode (no public address), or the Events API POSTing to `/hooks/<name>`. */
      mode: z.enum(['socket', 'events']).default('socket'),
      /** Socket Mode: the app-level token (xapp-…, scope connections:write), by environment variable. */
      app_token_env: EnvName.optional(),
      /** The Events API: the app's signing secret, by environment variable. */
      signing_secret_env: EnvName.optional(),
      /** The bot token (xoxb-…) replies are posted with, by environment variable. */
      bot_token_env: EnvName,
      /** The Web API's base URL (a test's, or a proxy). */
      api_base_url: z.url({ protocol: /^https?$/ }).default('https://slack.com/api/'),
    })
    .superRefine((channel, context) => {
      if (channel.mode === 'socket' && channel.app_token_env === undefined)
        context.addIssue({ code: 'custom', path: ['app_token_env'], message: 'Socket Mode needs the app-level token: app_token_env' });
      if (channel.mode === 'events' && channel.signing_secret_env === undefined)
        context.addIssue({ code: 'custom', path: ['signing_secret_env'], message: 'the Events API needs the signing secret: signing_secret_env' });
    }),
  z.strictObject({
    ...channelFields,
    kind: z.literal('discord'),
    /** The bot token (Developer Portal → Bot), by environment variable. */
    token_env: EnvName,
    /** The REST API's base URL; the gateway's address comes from it (a test's, or a proxy). */
    api_base_url: z.url({ protocol: /^https?$/ }).default('https://discord.com/api'),
  }),
  z.strictObject({
    ...channelFields,
    kind: z.literal('email'),
    /** The agent's address: replies come from it. */
    address: z.email(),
    /** Where new mail is read: `imaps://host:993` (TLS), or `imap://host:143` (STARTTLS required, except on loopback). */
    imap_url: z.url({ protocol: /^imaps?$/, error: 'expected an IMAP URL such as "imaps://imap.example.com:993"' }),
    /** Where replies are sent: `smtps://host:465` (TLS), or `smtp://host:587` (STARTTLS required, except on loopback). */
    smtp_url: z.url({ protocol: /^smtps?$/, error: 'expected an SMTP URL such as "smtps://smtp.example.com:465"' }),
    /** The account's user name and password (both servers), by environment variable. */
    user_env: EnvName,
    password_env: EnvName,
    mailbox: z.string().min(1).default('INBOX'),
    /** How often the mailbox is read. */
    poll_seconds: z.int().min(5).max(3600).default(30),
    /**
     * Whose mail is taken as from its `From:` address: `dkim`, only mail with a valid DKIM
     * signature of the From domain (or a domain above it); `none`, any mail (the header is
     * anyone's to write: only for a mailbox that only trusted senders can reach).
     */
    sender_check: z.enum(['dkim', 'none']).default('dkim'),
  }),
]);
export type ChannelConfig = z.output<typeof ChannelConfigSchema>;

/** The principal of a loopback client when no API key is configured. */
export const LOCAL_PRINCIPAL_NAME = 'local';
/** The principal of the key read from `LOOM_API_KEY`: an owner key. */
export const LOOM_API_KEY_NAME = 'LOOM_API_KEY';
/** The names Loom gives principals itself, which no `[[auth.keys]]` entry may take. */
export const RESERVED_KEY_NAMES: readonly string[] = [LOCAL_PRINCIPAL_NAME, LOOM_API_KEY_NAME];

/** The daemon's `config.toml`. Strict: an unknown key is an error that names it. */
export const ConfigSchema = z
  .strictObject({
    daemon: z
      .strictObject({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.int().min(0).max(65_535).default(4200),
        /** Requests with a larger body are refused with 413. */
        body_limit_bytes: z.int().positive().default(1_048_576),
        /** A request (a whole turn, for messages) taking longer is cancelled. */
        request_timeout_seconds: z.int().positive().default(300),
      })
      .prefault({}),
    /** Which names and pages the HTTP server answers (DNS rebinding, cross-site requests). */
    http: z
      .strictObject({
        /**
         * Host names the daemon answers besides localhost, 127.0.0.1, [::1] and the bound address
         * (e.g. the name a reverse proxy forwards). On a non-loopback bind with API keys and none
         * listed, any name is answered; with no key, only these, whatever the bind.
         */
        allowed_hosts: z
          .array(
            z
              .string()
              .min(1)
              .regex(/^[^\s/]+$/, { error: 'expected a host name such as "loom.example.com"' }),
          )
          .default([]),
        /** Browser origins besides the daemon's own that may call it, e.g. "https://ops.example.com". */
        allowed_origins: z.array(z.url({ protocol: /^https?$/, error: 'expected an origin such as "https://ops.example.com"' })).default([]),
      })
      .prefault({}),
    auth: z
      .strictObject({
        /** API keys; with none (and no LOOM_API_KEY), only loopback clients are served. Names are unique and not in `RESERVED_KEY_NAMES`. */
        keys: z
          .array(
            z.strictObject({
              name: z.string().min(1),
              role: z.enum(['owner', 'user', 'viewer']),
              /** The environment variable holding the secret (never the secret itself). */
              key_env: EnvName,
              /** For the user role: the agents (name patterns) it may message. */
              agents: z.array(z.string().min(1)).default(['*']),
            }),
          )
          .default([])
          // A key's name is who it is: what it creates (A2A tasks), its rate limit and its sessions go by it.
          .superRefine((keys, context) => {
            const seen = new Set<string>();
            keys.forEach((key, index) => {
              if (RESERVED_KEY_NAMES.includes(key.name)) {
                context.addIssue({
                  code: 'custom',
                  path: [index, 'name'],
                  message: `"${key.name}" is a name Loom gives a principal itself (${RESERVED_KEY_NAMES.map((name) => `"${name}"`).join(', ')}); name the key otherwise`,
                });
              } else if (seen.has(key.name)) {
                context.addIssue({ code: 'custom', path: [index, 'name'], message: `another key is already named "${key.name}"; each key needs its own name` });
              }
              seen.add(key.name);
            });
          }),
      })
      .prefault({}),
    rate_limit: z
      .strictObject({
        /** Cost units each client may spend per minute (a turn, by any door, costs 30, a spawn 50, health 1, reads and MCP/A2A protocol messages 5). */
        per_minute: z.int().positive().default(500),
        /** Limit the local user too: a loopback client when no API key is configured (off: it is the machine's owner). */
        loopback: z.boolean().default(false),
      })
      .prefault({}),
    store: z
      .strictObject({
        /** `normal`: a commit survives a crash of Loom; `full`: also a power cut, at the cost of an fsync per commit. */
        synchronous: z.enum(['normal', 'full']).default('normal'),
        /** A PostgreSQL database to keep the state in instead of the SQLite file (`LOOM_DATABASE_URL` wins over it). */
        url: PostgresUrlSchema.optional(),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(LOG_LEVELS).default('info'),
      })
      .prefault({}),
    /** What the daemon tells monitoring: Prometheus metrics and OpenTelemetry traces (docs/observability.md). */
    telemetry: z
      .strictObject({
        /** Serve `GET /metrics` to any client the daemon serves; off: only an owner's key reads it. */
        metrics_public: z.boolean().default(false),
        /** Where traces go over OTLP/HTTP (e.g. `http://127.0.0.1:4318`); `OTEL_EXPORTER_OTLP_ENDPOINT` sets it too. Unset: no traces. */
        otlp_endpoint: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }).optional(),
        /** Put messages and tool inputs and outputs in the traces' spans; off: only their sizes, names and counts. */
        capture_content: z.boolean().default(false),
      })
      .prefault({}),
    approvals: z
      .strictObject({
        /** How long a tool call waits for a human's approval before it is denied. */
        timeout_seconds: z.int().positive().default(300),
      })
      .prefault({}),
    /** Taint tracking: what a tool call carrying untrusted text into a sink meets (docs/security-model.md). */
    taint: z
      .strictObject({
        /** Every sink's action, over the defaults (approve for all but file_write, which is off). */
        policy: TaintActionSchema.optional(),
        /** One sink's action, over `policy`. */
        sinks: z
          .strictObject({
            shell_exec: TaintActionSchema.optional(),
            file_write: TaintActionSchema.optional(),
            /** Not a GET, to another host than the text came from. */
            http_request: TaintActionSchema.optional(),
            agent_spawn: TaintActionSchema.optional(),
            /** `agent_message` and `a2a_send`. */
            agent_message: TaintActionSchema.optional(),
          })
          .default({}),
        /** Callers besides the owner whose messages are trusted: an API key's name, or "<channel>:<platform user id>". */
        trusted: z.array(z.string().min(1)).default([]),
      })
      .prefault({}),
    cluster: z
      .strictObject({
        /** The name this daemon shows among the daemons sharing a PostgreSQL database (`hostname:pid` when unset). */
        node_name: z.string().trim().min(1).max(200).optional(),
        /**
         * How long a node holds a job of the shared work queue without renewing its lease (it renews
         * it every third of this while the job runs); a job whose node died runs again elsewhere after it.
         */
        job_lease_seconds: z.number().int().min(1).max(3600).default(30),
        /** How many jobs of the shared work queue this node runs at once. */
        job_concurrency: z.number().int().min(1).max(256).default(8),
        /**
         * How long a node holds a running turn without renewing its lease (it renews it every third
         * of this); a turn whose node died is taken over and finished by another node after it.
         */
        turn_lease_seconds: z.number().int().min(1).max(3600).default(15),
        /**
         * How long a node holds the polling of a channel that polls its platform without renewing
         * its lease; one node at a time polls it, and another takes over after this once it stops.
         */
        channel_lease_seconds: z.number().int().min(1).max(3600).default(15),
      })
      .prefault({}),
    scheduler: z
      .strictObject({
        /**
         * The IANA time zone cron schedules are read in: agents' `[schedule].cron` (UTC when
         * unset) and packages' `"timezone": "user_local"` (the system's when unset).
         */
        timezone: z.string().min(1).optional(),
        /**
         * What becomes of agents' wake-ups due while the daemon was down, unless an agent's
         * `[schedule].catch_up` says otherwise: `once` (the latest is run late), `all` (each is run,
         * oldest first) or `skip` (none is run). Each is recorded as a run (decision 0046).
         */
        catch_up: z.enum(CATCH_UP_POLICIES).default('once'),
        /** How old a missed wake-up may be and still be caught up, unless an agent's `[schedule].catch_up_window_seconds` says otherwise. */
        catch_up_window_seconds: z.int().positive().default(3600),
      })
      .prefault({}),
    /** MCP servers whose tools agents may use (spec/05), as `mcp_{server}_{tool}`. */
    mcp_servers: z
      .array(
        z
          .strictObject({
            name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, { error: 'expected letters, digits, "_" or "-"' }),
            timeout_secs: z.int().positive().default(30),
            /** Environment variables passed to a stdio server (besides PATH). */
            env: z.array(EnvName).default([]),
            /** Allow a URL on a private or loopback address (refused by default). */
            allow_private_network: z.boolean().default(false),
            /**
             * Let the server ask for completions (MCP sampling): run on the model of the agent whose
             * call it is serving, under that agent's quota. Refused by default.
             */
            sampling: z.boolean().default(false),
            /**
             * OAuth 2.1 for a remote (sse/http) server: `authorization_code` (a person logs in once
             * with `loom mcp login <name>`; tokens are kept and refreshed) or `client_credentials`
             * (an unattended daemon with its own client id and secret).
             */
            oauth: z
              .strictObject({
                grant: z.enum(['authorization_code', 'client_credentials']).default('authorization_code'),
                /** A client registered with the authorization server; without it Loom registers itself (dynamic registration). */
                client_id: z.string().min(1).optional(),
                /** The variable holding the client's secret (required for client_credentials). */
                client_secret_env: EnvName.optional(),
                scope: z.string().min(1).optional(),
                /** The authorization server's issuer the client credentials belong to: they are sent to no other. */
                issuer: z.url().optional(),
              })
              .superRefine((oauth, context) => {
                if (
                  oauth.grant === 'client_credentials' &&
                  (oauth.client_id === undefined || oauth.client_secret_env === undefined || oauth.issuer === undefined)
                ) {
                  context.addIssue({ code: 'custom', path: ['client_id'], message: 'client_credentials needs client_id, client_secret_env and issuer' });
                }
              })
              .optional(),
            transport: z.discriminatedUnion('type', [
              z.strictObject({ type: z.literal('stdio'), command: z.string().min(1), args: z.array(z.string()).default([]) }),
              z.strictObject({ type: z.literal('sse'), url: z.url() }),
              z.strictObject({
                type: z.literal('http'),
                url: z.url(),
                /** Header values may name environment variables as "${NAME}". */
                headers: z.record(z.string(), z.string()).default({}),
              }),
            ]),
          })
          .superRefine((server, context) => {
            if (server.oauth !== undefined && server.transport.type === 'stdio')
              context.addIssue({
                code: 'custom',
                path: ['oauth'],
                message: 'OAuth is for remote servers (transport sse or http); a stdio server gets its secrets through env',
              });
          }),
      )
      .default([]),
    /** What Loom serves over MCP (`loom mcp`, `POST /mcp`): agents as tools, plus these tools. */
    mcp_server: z
      .strictObject({
        /** Capabilities of the principal MCP clients act as, like a manifest's `[capabilities]`; none by default. */
        capabilities: ManifestCapabilitiesSchema.prefault({}),
      })
      .prefault({}),
    /** A2A (spec/05): serve agents to other frameworks and call agents elsewhere. */
    a2a: z
      .strictObject({
        enabled: z.boolean().default(true),
        /**
         * Where the A2A routes live (`/` for the root: the dashboard then serves only its own files).
         * A trailing slash is dropped, so that `/a2a/` serves at `/a2a` as written, not at `/a2a//`.
         */
        listen_path: z
          .string()
          .regex(/^\/(?:[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*\/?)?$/, {
            error: 'expected a path such as "/a2a" or "/agents/a2a": letters, digits, "_" and "-" between single slashes',
          })
          .overwrite(trimTrailingSlashes)
          .default('/a2a'),
        /** The agent whose card `/.well-known/agent-card.json` serves (the first agent when omitted). */
        default_agent: z.string().optional(),
        /**
         * With API keys configured, the agents (name patterns) whose cards anyone may read without a
         * key; every other card is shown only to a key that reaches its agent. Calling an agent still
         * needs a key that reaches it.
         */
        public_agents: z.array(z.string().min(1)).default([]),
        /** Deliver A2A push notifications (task updates POSTed to a client's webhook). */
        push_notifications: z.boolean().default(true),
        /** Allow push-notification webhooks on loopback and private addresses (refused by default; cloud metadata always). */
        push_allow_private_network: z.boolean().default(false),
        external_agents: z.array(z.strictObject({ name: z.string().min(1), url: z.url() })).default([]),
      })
      .prefault({}),
    /** Models by name, for packages' activities (`"model": "claude-sonnet"`). */
    models: z
      .strictObject({
        /** Name → model; adds to and overrides the built-in names (claude-sonnet, claude-haiku, gpt-4o, …). */
        aliases: z.record(z.string().min(1), ModelTargetSchema).default({}),
        /**
         * How many agents' model calls may run at once; the others wait, and the next free slot goes
         * to the agent of the highest `priority` (critical > high > normal > low; one that waits
         * long enough climbs, so none starves). 0: no limit, and priority orders nothing.
         */
        max_concurrent_calls: z.int().min(0).max(1024).default(0),
      })
      .prefault({}),
    /** Registries that install codes and qualified names resolve through, searched in order. */
    registries: z
      .array(
        z.strictObject({
          name: z.string().min(1),
          /** A folder, or an http(s) URL serving the same files (index.json and archives/). */
          location: z.string().min(1),
        }),
      )
      .default([]),
    /** The model of agents whose manifest has no `[model]`. */
    default_model: ModelTargetSchema.optional(),
    /** The model serving each routing tier, for agents with `[routing]` enabled. */
    routing: z
      .strictObject({
        frontier: ModelTargetSchema.optional(),
        smart: ModelTargetSchema.optional(),
        balanced: ModelTargetSchema.optional(),
        fast: ModelTargetSchema.optional(),
      })
      .prefault({}),
    /** Prices in USD per million tokens, keyed "provider/model"; they override the built-in catalog. */
    prices: ModelPriceOverridesSchema.default({}),
    /** Context windows in tokens, keyed "provider/model" (default 128,000). */
    context_windows: z.record(z.string(), z.int().positive()).default({}),
    /**
     * The same person on several channels, by name: `ada = ["telegram:42", "hooks:u-ada"]` (a
     * channel's name, a colon, the platform's user id). An agent then remembers what it said with
     * them on one channel when they write on another. Someone not listed is one person per channel.
     */
    people: z
      .record(
        z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { error: 'expected a name of letters, digits, ".", "_" or "-"' }),
        z.array(z.string().regex(/^[a-z0-9][a-z0-9_-]*:.+$/, { error: 'expected "<channel>:<platform user id>", e.g. "telegram:42"' })),
      )
      .default({}),
    /** Chat platforms and webhooks people talk to agents from. */
    channels: z
      .array(ChannelConfigSchema)
      .default([])
      .superRefine((channels, context) => {
        const seen = new Set<string>();
        channels.forEach((channel, index) => {
          if (seen.has(channel.name))
            context.addIssue({ code: 'custom', path: [index, 'name'], message: `another channel is already named "${channel.name}"` });
          seen.add(channel.name);
        });
      }),
  })
  .superRefine((config, context) => {
    // A person is named by channels that exist, and one platform user is one person.
    const channels = new Set(config.channels.map((channel) => channel.name));
    const owner = new Map<string, string>();
    for (const [person, handles] of Object.entries(config.people)) {
      handles.forEach((handle, index) => {
        const channel = handle.slice(0, handle.indexOf(':'));
        if (!channels.has(channel))
          context.addIssue({
            code: 'custom',
            path: ['people', person, index],
            message: `no [[channels]] entry is named "${channel}"${channels.size === 0 ? ' (none is configured)' : ` (configured: ${[...channels].join(', ')})`}`,
          });
        const other = owner.get(handle);
        if (other !== undefined)
          context.addIssue({ code: 'custom', path: ['people', person, index], message: `"${handle}" is already ${other}; a platform user is one person` });
        owner.set(handle, person);
      });
    }
  });

/** A validated configuration with every default filled in. */
export type Config = z.output<typeof ConfigSchema>;

/** The commented `config.toml` that `loom init` writes. Every value shown is the default. */
export const DEFAULT_CONFIG_TOML = `# Loom configuration. Every value below is the default; uncomment a line to change it.
# Reference: docs/configuration.md.

[daemon]
# Where the daemon listens. Keep it on loopback unless API keys are configured.
# host = "127.0.0.1"
# port = 4200
# body_limit_bytes = 1048576
# request_timeout_seconds = 300

[http]
# On a loopback bind, or on any bind with no API key, only requests for localhost, 127.0.0.1,
# [::1] and the bound address are answered, and a browser may call the daemon only from its own
# pages: a web page cannot reach it by rebinding its own name to this machine. Behind a reverse
# proxy, or on another address, name what to accept.
# allowed_hosts = ["loom.example.com"]
# allowed_origins = ["https://ops.example.com"]

# API keys. With none (and no LOOM_API_KEY in the environment), only loopback clients are
# served. The secret lives in an environment variable, never in this file. Each key needs its
# own name, not "local" nor "LOOM_API_KEY" (names Loom gives principals itself).
# [[auth.keys]]
# name = "ci"
# role = "user"                   # owner | user | viewer
# key_env = "LOOM_CI_KEY"
# agents = ["helper-*"]           # for "user": the agents it may message

[rate_limit]
# Cost units per client per minute: a turn (a message, a workflow command, an MCP call or an A2A
# message that runs one) costs 30, a spawn 50, a read or a protocol message 5, health 1.
# per_minute = 500
# The local user (a loopback client when no API key is configured) is not limited unless:
# loopback = true

[store]
# "normal": every acknowledged write survives a crash of Loom (SQLite WAL).
# "full": it also survives a power cut, at the cost of an fsync per commit.
# synchronous = "normal"
# Keep the state in PostgreSQL instead of data/loom.db (the environment's LOOM_DATABASE_URL,
# when set, wins over this line, and keeps the password out of this file):
# url = "postgres://loom:password@db.example.com:5432/loom"

[log]
# debug | info | warn | error | silent
# level = "info"

[telemetry]
# GET /metrics (Prometheus text) answers an owner's key; true serves it to any client served.
# metrics_public = false
# Send traces (OpenTelemetry, GenAI conventions) over OTLP/HTTP; OTEL_EXPORTER_OTLP_ENDPOINT works too.
# otlp_endpoint = "http://127.0.0.1:4318"
# Put messages and tool inputs and outputs in the spans (off: sizes and counts only).
# capture_content = false

[approvals]
# How long a tool call listed in [autonomous].approval_required_for waits for a human
# (loom approvals approve|deny, the API or the dashboard) before it is denied.
# timeout_seconds = 300

[taint]
# Text from outside an agent (fetched pages, searches, MCP results, A2A, messages from anyone but
# the owner, files other agents wrote) is untrusted within its turn. A tool call carrying it into a
# sink is put to a person ("approve"), refused ("refuse") or let through ("off"), by sink:
# sinks = { shell_exec = "approve", file_write = "off", http_request = "approve", agent_spawn = "approve", agent_message = "approve" }
# policy = "refuse" would set every sink not named in sinks at once (unset: each its default).
# Senders besides the owner whose messages are trusted (a key's name, "<channel>:<user id>"):
# trusted = ["telegram:42"]

[cluster]
# With [store] url on PostgreSQL, several daemons may share the database: one of them (the
# leader) fires the schedules. The name this daemon shows in loom status (default hostname:pid):
# node_name = "web-1"
# Triggered work (timed package runs, scheduled wake-ups) goes through a queue in the database;
# any node takes it. A job whose node dies runs again elsewhere once its lease lapses:
# job_lease_seconds = 30
# How many jobs this node runs at once:
# job_concurrency = 8
# A turn running on a node that dies is taken over by another node once its lease lapses:
# turn_lease_seconds = 15
# A channel that polls its platform (Telegram long polling, email, Discord, Slack Socket Mode) is
# polled by one node at a time; another takes over once its lease lapses:
# channel_lease_seconds = 15

[scheduler]
# The IANA time zone cron schedules are read in: agents' [schedule].cron (UTC when unset) and
# packages whose agent.json says "timezone": "user_local" (the system's time zone when unset).
# timezone = "Europe/Berlin"
# Wake-ups of continuous and periodic agents due while the daemon was down: "once" runs the latest
# late, "all" runs each (oldest first), "skip" none; each is recorded (loom agent runs <agent>).
# Only those due within the window are caught up. An agent's [schedule] may say otherwise.
# catch_up = "once"
# catch_up_window_seconds = 3600

# MCP servers whose tools agents may use, named mcp_<server>_<tool>. Stdio servers get a cleared
# environment: PATH plus the variables listed in env.
# [[mcp_servers]]
# name = "github"
# timeout_secs = 30
# env = ["GITHUB_PERSONAL_ACCESS_TOKEN"]
# [mcp_servers.transport]
# type = "stdio"                  # stdio | sse | http
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-github"]

# What MCP clients (loom mcp, POST /mcp) may call besides the agents: a capability block.
# [mcp_server.capabilities]
# tools = ["web_fetch"]

# A2A: other frameworks call Loom's agents; Loom's agents call agents elsewhere (a2a_send).
[a2a]
# enabled = true
# listen_path = "/a2a"
# default_agent = "researcher"
# public_agents = ["helper-*"]          # with API keys: cards anyone may read without a key (none by default)
# push_notifications = true              # POST task updates to a client's webhook
# push_allow_private_network = false     # webhooks on loopback/private addresses (e.g. a local test receiver)
# [[a2a.external_agents]]
# name = "research-agent"
# url = "https://research.example.com"

# The model of agents whose manifest has no [model]. Without it such agents cannot run.
# [default_model]
# provider = "ollama"            # anthropic | openai | groq | openrouter | ollama | openai-compatible
# model = "llama3.2"
# base_url = "http://127.0.0.1:11434/v1"
# api_key_env = "OLLAMA_API_KEY"

# The model serving each tier, for agents with [routing] enabled (see docs/agents.md, "Models and providers").
# [routing.frontier]
# provider = "anthropic"
# model = "claude-opus-4-1"
# [routing.fast]
# provider = "groq"
# model = "llama-3.1-8b-instant"

# Prices in USD per million tokens; they override the built-in catalog.
# [prices."openai/gpt-4o"]
# input_per_million = 2.5
# output_per_million = 10

# Context windows in tokens (default 128000); compaction starts at 75% of it.
# [context_windows]
# "ollama/llama3.2" = 8192

# How many agents' model calls may run at once (0, the default: no limit); the others wait, and
# each free slot goes to the agent of the highest priority (critical > high > normal > low).
# [models]
# max_concurrent_calls = 4

# Model names packages' activities use ("model": "claude-sonnet"). These add to and override
# the built-in names: claude-opus, claude-sonnet, claude-haiku, gpt-5, gpt-5-mini, gpt-4o, gpt-4o-mini.
# [models.aliases.claude-sonnet]
# provider = "openrouter"
# model = "anthropic/claude-sonnet-4.5"

# Registries that install codes (AGNT-XXXX-XXXX, SKIL-XXXX-XXXX) and names such as
# @org/agents/name resolve through, in order: a folder, or a URL serving the same files.
# [[registries]]
# name = "team"
# location = "https://registry.example.com/loom"

# Channels: people talk to an agent from Telegram or a signed webhook (see
# docs/channels.md). Deny by default: a stranger gets a code you approve with "loom channels approve".
# [[channels]]
# name = "support"
# kind = "telegram"
# agent = "assistant"
# token_env = "TELEGRAM_BOT_TOKEN"
# [channels.policy]
# direct = "pairing"              # open | allowlist | pairing | closed
# groups = "closed"               # open | allowlist | closed
# allow_users = []
# require_mention = true
# messages_per_minute = 10

# The same person on several channels ("<channel>:<user id>"): an agent remembers them across.
# [people]
# ada = ["support:42"]
`;
