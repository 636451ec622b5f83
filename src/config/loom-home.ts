import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError } from '../errors/index.ts';
import { formatIssues, objectKeysAt } from '../validation/index.ts';
import { type Config, ConfigSchema, DEFAULT_CONFIG_TOML } from './config-schema.ts';

/** The folders and files of a Loom home (`LOOM_HOME`, default `~/.loom`). */
export interface LoomHome {
  root: string;
  configPath: string;
  dataDir: string;
  databasePath: string;
  /** Installed agent packages, a folder each. */
  agentsDir: string;
  /** Installed skills: `<org>/<name>/<version>/SKILL.md`. */
  skillsDir: string;
  /** One folder per agent. */
  workspacesDir: string;
  logsDir: string;
  /** OAuth sessions of remote MCP servers, a file each (mode 0600, the folder 0700). */
  mcpOAuthDir: string;
}

/** Expands a leading `~` to the user's home folder. */
export function expandHome(path: string, home = homedir()): string {
  return path === '~' ? home : path.startsWith('~/') ? join(home, path.slice(2)) : path;
}

/** The home folder `LOOM_HOME` names (relative to `cwd`), or `~/.loom`. */
export function resolveLoomHome(env: Readonly<Record<string, string | undefined>>, cwd: string): LoomHome {
  const configured = env['LOOM_HOME'];
  const root = configured === undefined || configured === '' ? join(homedir(), '.loom') : resolve(cwd, expandHome(configured));
  const dataDir = join(root, 'data');
  return {
    root,
    configPath: join(root, 'config.toml'),
    dataDir,
    databasePath: join(dataDir, 'loom.db'),
    agentsDir: join(root, 'agents'),
    skillsDir: join(root, 'skills'),
    workspacesDir: join(root, 'workspaces'),
    logsDir: join(root, 'logs'),
    mcpOAuthDir: join(dataDir, 'mcp-oauth'),
  };
}

/**
 * Creates the home's folders, and a commented `config.toml` when there is none. An existing
 * config is never overwritten. Returns whether the config was written.
 */
export async function ensureLoomHome(home: LoomHome): Promise<{ configWritten: boolean }> {
  for (const dir of [home.root, home.dataDir, home.agentsDir, home.skillsDir, home.workspacesDir, home.logsDir]) {
    await mkdir(dir, { recursive: true });
  }
  try {
    await writeFile(home.configPath, DEFAULT_CONFIG_TOML, { flag: 'wx' });
    return { configWritten: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { configWritten: false };
    throw error;
  }
}

/**
 * Reads and validates `config.toml`; a missing file means every default.
 * @throws {ConfigError} naming the file, the field and what was expected.
 */
export async function loadConfig(home: LoomHome): Promise<Config> {
  return (await loadConfigText(home)).config;
}

/**
 * `loadConfig`, with the text the config was read from (null: there was no file), for a reader
 * that must know which version of the file it read (the daemon following `[default_model]`).
 * @throws {ConfigError} naming the file, the field and what was expected.
 */
export async function loadConfigText(home: LoomHome): Promise<{ config: Config; text: string | null }> {
  let text: string;
  try {
    text = await readFile(home.configPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { config: ConfigSchema.parse({}), text: null };
    throw new ConfigError(`cannot read config "${home.configPath}": ${(error as Error).message}`, { cause: error });
  }
  return { config: parseConfigText(home, text), text };
}

/** Parses and validates the text of `home`'s config.toml. @throws {ConfigError} */
function parseConfigText(home: LoomHome, text: string): Config {
  let document: unknown;
  try {
    document = parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const headline = error.message.replace(/^Invalid TOML document: /, '').split('\n')[0] ?? '';
    throw new ConfigError(`cannot load config "${home.configPath}": TOML syntax error at line ${error.line}, column ${error.column}: ${headline}`);
  }
  const result = ConfigSchema.safeParse(document, { reportInput: true });
  if (!result.success) {
    const lines = formatIssues(result.error, { style: 'toml', knownKeys: (path) => objectKeysAt(ConfigSchema, path) });
    throw new ConfigError(`cannot load config "${home.configPath}": ${lines.join('; ')}`);
  }
  return result.data;
}
