import { type FSWatcher, watch } from 'node:fs';
import { basename } from 'node:path';
import { type Config, loadConfigText, type LoomHome } from '../config/index.ts';
import type { Logger } from '../contracts/index.ts';
import type { AgentRuntime } from '../kernel/index.ts';
import { modelName } from '../models/index.ts';

/** What {@link followDefaultModel} keeps up to date, and whom it tells. */
export interface FollowDefaultModelOptions {
  home: LoomHome;
  /** The daemon's configuration: its `default_model` is replaced in place (what the HTTP API reads). */
  config: Config;
  /** The agents' runtime: its `defaultModel` is replaced in place (what every turn reads). */
  runtime: Pick<AgentRuntime, 'defaultModel'>;
  logger: Logger;
  /**
   * Called after a change was read, with whether the daemon now runs with config.toml as it was
   * read (nothing else in it changed) and the text it read (null: no file).
   */
  onRead?: (current: boolean, text: string | null) => Promise<void>;
}

/** JSON of a config without its default model: what the daemon reads only when it starts. */
const restOf = (config: Config): string => JSON.stringify({ ...config, default_model: undefined });

/**
 * Follows `[default_model]` in config.toml while the daemon runs, so that `loom init` (or an
 * edit) takes effect without a restart: agents without `[model]` run on the new default model from
 * their next turn, and the HTTP API's readiness checks read it. Every other setting is read when
 * the daemon starts. A config.toml that cannot be read is reported and changes nothing.
 * @returns `close`, which stops following.
 */
export function followDefaultModel(options: FollowDefaultModelOptions): { close(): void } {
  const { home, config, runtime, logger } = options;
  const startedWith = restOf(config);
  let reading: Promise<void> | undefined;
  let again = false;
  const read = async (): Promise<void> => {
    let next: Config;
    let text: string | null;
    try {
      ({ config: next, text } = await loadConfigText(home));
    } catch (error) {
      logger.warn(
        { err: error },
        `config.toml changed but cannot be read, so the daemon goes on with what it has: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    if (JSON.stringify(next.default_model) !== JSON.stringify(config.default_model)) {
      config.default_model = next.default_model;
      if (next.default_model === undefined) delete runtime.defaultModel;
      else runtime.defaultModel = next.default_model;
      logger.info(
        { default_model: next.default_model === undefined ? null : modelName(next.default_model) },
        next.default_model === undefined
          ? 'config.toml names no [default_model] any more: agents without [model] cannot run'
          : `Default model: ${modelName(next.default_model)} ([default_model] in config.toml changed); agents without [model] run on it from their next turn`,
      );
    }
    await options.onRead?.(restOf(next) === startedWith, text);
  };
  const changed = (): void => {
    if (reading !== undefined) {
      again = true;
      return;
    }
    reading = read()
      .catch((error: unknown) => logger.error({ err: error }, 'could not follow config.toml'))
      .finally(() => {
        reading = undefined;
        if (again) {
          again = false;
          changed();
        }
      });
  };
  let watcher: FSWatcher | undefined;
  try {
    // The folder, not the file: an editor (or `loom init` on a new home) may replace the file.
    watcher = watch(home.root, (_event, file) => {
      if (file === basename(home.configPath)) changed();
    });
    watcher.on('error', (error) => logger.warn({ err: error }, 'stopped following config.toml'));
  } catch (error) {
    logger.warn({ err: error }, 'cannot follow config.toml: a new [default_model] takes a restart');
  }
  return { close: () => watcher?.close() };
}
