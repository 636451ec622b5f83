import { z } from 'zod';
import type { InstalledPackageRecord, InstalledPackageRepository } from '../../contracts/index.ts';
import { jsonObjectText, jsonText, parseRow, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, sql } from '../sql/statement.ts';

const columns = 'slug, qualified_name, version, agent_id, source, persona, agent_json, loom_toml, settings, skills, installed_at, last_fires';
const select = raw(`SELECT ${columns} FROM installed_packages`);

/** A row of `installed_packages`: one package, its documents as JSON. */
const installedPackageRow = z
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
  .transform((row): InstalledPackageRecord => ({
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
  }));

/** `InstalledPackageRepository` on either database: one row per package, its documents as JSON text. */
export class SqlInstalledPackageRepository implements InstalledPackageRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async create(record: InstalledPackageRecord): Promise<void> {
    const values = [
      record.slug,
      record.qualifiedName,
      record.version,
      record.agentId,
      record.source,
      record.persona,
      JSON.stringify(record.agentJson),
      JSON.stringify(record.loomToml),
      JSON.stringify(record.settings),
      JSON.stringify(record.skills),
      record.installedAt,
      JSON.stringify(record.lastFires),
    ];
    await this.#db.run(insert('installed_packages', columns, values), () => ({ action: `store installed package "${record.slug}"` }));
  }

  async get(slug: string): Promise<InstalledPackageRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE slug = ${slug}`, () => ({ action: `read installed package "${slug}"` }));
    return row === undefined ? undefined : parsePackage(row);
  }

  async list(): Promise<InstalledPackageRecord[]> {
    return (await this.#db.all(sql`${select} ORDER BY slug`, () => ({ action: 'list installed packages' }))).map(parsePackage);
  }

  async delete(slug: string): Promise<void> {
    await this.#db.run(sql`DELETE FROM installed_packages WHERE slug = ${slug}`, () => ({ action: `remove installed package "${slug}"` }));
  }

  async setLastFire(slug: string, binding: string, at: number): Promise<void> {
    // One statement: a concurrent setLastFire of another binding is not lost.
    await this.#db.run(sql`UPDATE installed_packages SET last_fires = ${this.#db.jsonWithKey('last_fires', binding, at)} WHERE slug = ${slug}`, () => ({
      action: `record a fire of package "${slug}"`,
    }));
  }
}

function parsePackage(row: Row): InstalledPackageRecord {
  return parseRow(installedPackageRow, row, 'installed_packages', ['slug']);
}
