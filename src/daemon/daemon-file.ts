import { createHash } from 'node:crypto';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { LoomHome } from '../config/index.ts';
import { safeParseJson } from '../validation/index.ts';

/** How to reach a running daemon, as it writes it into `LOOM_HOME/daemon.json`. */
export const DaemonInfoSchema = z.object({
  pid: z.int().positive(),
  host: z.string(),
  port: z.int().min(1).max(65_535),
  url: z.string(),
  startedAt: z.string(),
  version: z.string(),
  /**
   * When the daemon last found config.toml as it runs with it: its start, or a change of
   * `[default_model]` alone, which it follows (absent from daemons before it did).
   */
  configReadAt: z.string().optional(),
  /**
   * config.toml's modification time (ms) as the daemon runs with it, null when there was none:
   * a file whose time differs has changed since. Compared as it is, not against a clock, since a
   * file system stamps times coarsely (absent from daemons before it was kept).
   */
  configMtimeMs: z.number().nullable().optional(),
  /**
   * The SHA-256 (hex) of config.toml's text as the daemon runs with it, null when there was none:
   * a file whose text hashes otherwise has changed since. Exact where a modification time is not
   * (two writes within one tick of the file system's clock share it); preferred to
   * `configMtimeMs` when present.
   */
  configDigest: z.string().nullable().optional(),
});

/** A running daemon's address and process. */
export type DaemonInfo = z.infer<typeof DaemonInfoSchema>;

/** Where the daemon says how to reach it. */
export function daemonFilePath(home: LoomHome): string {
  return join(home.root, 'daemon.json');
}

/** Writes the daemon file (atomically enough for one writer: the daemon). */
export async function writeDaemonFile(home: LoomHome, info: DaemonInfo): Promise<void> {
  const path = daemonFilePath(home);
  await writeFile(`${path}.tmp`, `${JSON.stringify(info, null, 2)}\n`);
  const { rename } = await import('node:fs/promises');
  await rename(`${path}.tmp`, path);
}

/** Removes the daemon file, if it is still this process's. */
export async function removeDaemonFile(home: LoomHome, pid: number): Promise<void> {
  const info = await readDaemonFile(home);
  if (info?.pid === pid) await rm(daemonFilePath(home), { force: true });
}

/** Whether a process with this pid exists. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The daemon file, when there is one and its process is alive. A file left by a daemon that
 * died (SIGKILL) is ignored.
 */
export async function readDaemonFile(home: LoomHome): Promise<DaemonInfo | undefined> {
  let text: string;
  try {
    text = await readFile(daemonFilePath(home), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = safeParseJson(text);
  if (!parsed.ok) return undefined;
  const info = DaemonInfoSchema.safeParse(parsed.value);
  if (!info.success || !isProcessAlive(info.data.pid)) return undefined;
  return info.data;
}

/**
 * Whether config.toml changed after `daemon` started: a daemon reads it when it starts, so one
 * started before goes on without the change until it is restarted. False when there is no file.
 */
export async function startedBeforeConfigChanged(home: LoomHome, daemon: DaemonInfo): Promise<boolean> {
  if (daemon.configDigest !== undefined) return (await configDigest(home)) !== daemon.configDigest;
  const changed = await configMtime(home);
  if (changed === null) return false;
  if (daemon.configMtimeMs !== undefined) return changed !== daemon.configMtimeMs;
  return changed > Date.parse(daemon.configReadAt ?? daemon.startedAt);
}

/** The SHA-256 (hex) of `text`, config.toml's contents as read; null for no file. */
export function digestOf(text: string | null): string | null {
  return text === null ? null : createHash('sha256').update(text).digest('hex');
}

/** The SHA-256 (hex) of config.toml's text now, null when there is no file. */
export async function configDigest(home: LoomHome): Promise<string | null> {
  return digestOf(
    await readFile(home.configPath, 'utf8').catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }),
  );
}

/** config.toml's modification time in ms, null when there is no file. */
export async function configMtime(home: LoomHome): Promise<number | null> {
  return stat(home.configPath).then(
    (info) => info.mtimeMs,
    () => null,
  );
}

/** The home's running daemon when it started before config.toml last changed, else undefined. */
export async function staleDaemon(home: LoomHome): Promise<DaemonInfo | undefined> {
  const daemon = await readDaemonFile(home);
  return daemon !== undefined && (await startedBeforeConfigChanged(home, daemon)) ? daemon : undefined;
}
