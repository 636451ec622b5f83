/** A value bound to a statement's parameter. Arrays only on PostgreSQL (SQLite refuses them). */
export type Parameter = string | number | boolean | null | readonly string[] | readonly number[] | readonly (string | null)[];

/**
 * A statement written once for both databases: its text around its parameters, which each
 * dialect numbers its own way (`?` on SQLite, `$1`, `$2`… on PostgreSQL). Built with the {@link sql}
 * tag, so that values never enter the text.
 */
export class Sql {
  /** The text before each value, and after the last: one more than `values`. */
  readonly strings: readonly string[];
  /** The values, in order. */
  readonly values: readonly Parameter[];

  constructor(strings: readonly string[], values: readonly Parameter[]) {
    this.strings = strings;
    this.values = values;
  }

  /** The text, each parameter written by `placeholder` from its 1-based position. */
  text(placeholder: (position: number) => string): string {
    let text = this.strings[0] ?? '';
    for (let index = 1; index < this.strings.length; index += 1) text += placeholder(index) + (this.strings[index] ?? '');
    return text;
  }
}

/**
 * Builds a statement: each `${value}` becomes a parameter, each `${sql`…`}` (or {@link raw}
 * text) is spliced in with its own parameters.
 *
 * @example
 * sql`SELECT ${raw(columns)} FROM memory WHERE agent_id = ${agentId} ORDER BY key`
 */
export function sql(strings: TemplateStringsArray, ...parts: readonly (Parameter | Sql)[]): Sql {
  const texts: string[] = [strings[0] ?? ''];
  const values: Parameter[] = [];
  parts.forEach((part, index) => {
    const after = strings[index + 1] ?? '';
    if (part instanceof Sql) {
      texts[texts.length - 1] += part.strings[0] ?? '';
      texts.push(...part.strings.slice(1));
      values.push(...part.values);
      texts[texts.length - 1] += after;
    } else {
      values.push(part);
      texts.push(after);
    }
  });
  return new Sql(texts, values);
}

/** Text spliced into a statement as it is: only ever a constant (column lists, keywords). */
export function raw(text: string): Sql {
  return new Sql([text], []);
}

/** `WHERE a AND b …` of the `conditions`, or nothing when there are none. */
export function where(conditions: readonly Sql[]): Sql {
  if (conditions.length === 0) return raw('');
  return conditions.slice(1).reduce((clause, condition) => sql`${clause} AND ${condition}`, sql`WHERE ${conditions[0] ?? raw('TRUE')}`);
}

/**
 * `INSERT INTO table (columns) VALUES (…)` of `values`, one per column, and when `conflict` is
 * given an upsert: on a row with the same `key`, the other columns (or `update`) take the new values.
 */
export function insert(table: string, columns: string, values: readonly Parameter[], conflict?: { key: string; update?: readonly string[] }): Sql {
  const names = columns.split(', ');
  if (names.length !== values.length) throw new Error(`insert into ${table}: ${names.length} columns but ${values.length} values`);
  const list = values.slice(1).reduce<Sql>((text, value) => sql`${text}, ${value}`, sql`${values[0] ?? null}`);
  const statement = sql`INSERT INTO ${raw(table)} (${raw(columns)}) VALUES (${list})`;
  if (conflict === undefined) return statement;
  const keys = conflict.key.split(', ');
  const update = conflict.update ?? names.filter((name) => !keys.includes(name));
  return sql`${statement} ON CONFLICT (${raw(conflict.key)}) DO UPDATE SET ${raw(update.map((name) => `${name} = excluded.${name}`).join(', '))}`;
}

/** `UPDATE table SET column = value, … WHERE condition`, one value per column of `columns`. */
export function update(table: string, columns: string, values: readonly Parameter[], condition: Sql): Sql {
  const names = columns.split(', ');
  if (names.length !== values.length) throw new Error(`update ${table}: ${names.length} columns but ${values.length} values`);
  const set = names
    .slice(1)
    .reduce((text, name, index) => sql`${text}, ${raw(name)} = ${values[index + 1] ?? null}`, sql`${raw(names[0] ?? '')} = ${values[0] ?? null}`);
  return sql`UPDATE ${raw(table)} SET ${set} WHERE ${condition}`;
}
