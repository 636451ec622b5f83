import { z } from 'zod';
import { LOG_LEVELS } from '../logging/index.ts';

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
`;
