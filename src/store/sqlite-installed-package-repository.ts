import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { InstalledPackageRecord, InstalledPackageRepository, JsonObject } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonObjectText, jsonText, parseRow, type SqliteRow } from './sqlite-rows.ts';

const packageRow = z
  .object({
    slug: z.string(),
    qualified_name: z.string().nullable(),
    version: z.string(),
    agent_id: z.string(),
    source: z.string(),
    persona: z.string(),
    agent_json: jsonObjectText,
    loom_toml: jsonObjectText,
    settings: jsonText.pipe(z.array(z.string())),
    skills: jsonText.pipe(z.record(z.string(), z.object({ prompt: z.string(), requires: z.array(z.string()) }))),
    installed_at: z.number(),
    last_fires: jsonText.pipe(z.record(z.string(), z.number())),
  })
  .transform(
    (row): InstalledPackageRecord => ({
      slug: row.slug,
      qualifiedName: row.qualified_name,
      version: row.version,
      agentId: row.agent_id,
      source: row.source,
      persona: row.persona,
      agentJson: row.agent_json,
      loomToml: row.loom_toml,
      settings: row.settings,
      skills: row.skills,
      installedAt: row.installed_at,
      lastFires: row.last_fires,
    }),
  );

const columns = 'slug, qualified_name, version, agent_id, source, persona, agent_json, loom_toml, settings, skills, installed_at, last_fires';

/** `InstalledPackageRepository` on SQLite (migration 7): one row per package, its documents as JSON. */
export class SqliteInstalledPackageRepository implements InstalledPackageRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #delete: StatementSync;
  readonly #setLastFire: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO installed_packages (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#get = db.prepare(`SELECT ${columns} FROM installed_packages WHERE slug = ?`);
    this.#list = db.prepare(`SELECT ${columns} FROM installed_packages ORDER BY slug`);
    this.#delete = db.prepare('DELETE FROM installed_packages WHERE slug = ?');
    this.#setLastFire = db.prepare("UPDATE installed_packages SET last_fires = json_set(last_fires, '$.' || json_quote(?), ?) WHERE slug = ?");
  }

  create(record: InstalledPackageRecord): Promise<void> {
    const json = (value: JsonObject | readonly string[] | Record<string, unknown>): string => JSON.stringify(value);
    return this.#connection.execute(
      () => {
        this.#create.run(
          record.slug,
          record.qualifiedName,
          record.version,
          record.agentId,
          record.source,
          record.persona,
          json(record.agentJson),
          json(record.loomToml),
          json(record.settings),
          json(record.skills),
          record.installedAt,
          json(record.lastFires),
        );
      },
      () => ({ action: `store installed package "${record.slug}"` }),
    );
  }

  get(slug: string): Promise<InstalledPackageRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(slug);
        return row === undefined ? undefined : parsePackage(row);
      },
      () => ({ action: `read installed package "${slug}"` }),
    );
  }

  list(): Promise<InstalledPackageRecord[]> {
    return this.#connection.execute(
      () => this.#list.all().map(parsePackage),
      () => ({ action: 'list installed packages' }),
    );
  }

  delete(slug: string): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#delete.run(slug);
      },
      () => ({ action: `remove installed package "${slug}"` }),
    );
  }

  setLastFire(slug: string, binding: string, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#setLastFire.run(binding, at, slug);
      },
      () => ({ action: `record a fire of package "${slug}"` }),
    );
  }
}

function parsePackage(row: SqliteRow): InstalledPackageRecord {
  return parseRow(packageRow, row, 'installed_packages', ['slug']);
}
