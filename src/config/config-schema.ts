import { z } from 'zod';
import { LOG_LEVELS } from '../logging/index.ts';
import { ModelTargetSchema } from '../manifest/index.ts';
import { ModelPriceOverridesSchema } from '../models/index.ts';

/** The daemon's `config.toml`. Strict: an unknown key is an error that names it. */
export const ConfigSchema = z.strictObject({
  daemon: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.int().min(0).max(65_535).default(4200),
    })
    .prefault({}),
  store: z
    .strictObject({
      /** `normal`: a commit survives a crash of Loom; `full`: also a power cut, at the cost of an fsync per commit. */
      synchronous: z.enum(['normal', 'full']).default('normal'),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: z.enum(LOG_LEVELS).default('info'),
    })
    .prefault({}),
  scheduler: z
    .strictObject({
      /** The IANA time zone cron schedules are read in. */
      timezone: z.string().min(1).default('UTC'),
    })
    .prefault({}),
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
});

/** A validated configuration with every default filled in. */
export type Config = z.output<typeof ConfigSchema>;

/** The commented `config.toml` that `loom init` writes. Every value shown is the default. */
export const DEFAULT_CONFIG_TOML = `# Loom configuration. Every value below is the default; uncomment a line to change it.
# Reference: the README's "Configuration" section.

[daemon]
# Where the daemon listens. Keep it on loopback unless API keys are configured.
# host = "127.0.0.1"
# port = 4200

[store]
# "normal": every acknowledged write survives a crash of Loom (SQLite WAL).
# "full": it also survives a power cut, at the cost of an fsync per commit.
# synchronous = "normal"

[log]
# debug | info | warn | error | silent
# level = "info"

[scheduler]
# The IANA time zone cron schedules ([schedule].cron) are read in.
# timezone = "UTC"

# The model of agents whose manifest has no [model]. Without it such agents cannot run.
# [default_model]
# provider = "ollama"            # anthropic | openai | groq | openrouter | ollama | openai-compatible
# model = "llama3.2"
# base_url = "http://127.0.0.1:11434/v1"
# api_key_env = "OLLAMA_API_KEY"

# The model serving each tier, for agents with [routing] enabled (see the README's "Routing").
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
`;
