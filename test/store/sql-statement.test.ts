import { describe, expect, it } from 'vitest';
import { insert, raw, sql, update, where } from '../../src/store/sql/statement.ts';

const question = (): string => '?';
const dollar = (position: number): string => `$${position}`;

describe('the store’s statements, written once', () => {
  it('number the values of spliced fragments in order, as each database writes its parameters', () => {
    const statement = sql`SELECT ${raw('id, name')} FROM t ${where([sql`a = ${1}`, sql`b = ${'x'}`])} LIMIT ${10}`;
    expect(statement.text(question)).toBe('SELECT id, name FROM t WHERE a = ? AND b = ? LIMIT ?');
    expect(statement.text(dollar)).toBe('SELECT id, name FROM t WHERE a = $1 AND b = $2 LIMIT $3');
    expect(statement.values).toEqual([1, 'x', 10]);
  });

  it('write no WHERE for no conditions', () => {
    expect(sql`SELECT 1 FROM t ${where([])} ORDER BY k`.text(dollar)).toBe('SELECT 1 FROM t  ORDER BY k');
  });

  it('build an upsert that updates every column but the key, or the columns named', () => {
    expect(insert('m', 'a, k, v', [1, 2, 3], { key: 'a, k' }).text(dollar)).toBe(
      'INSERT INTO m (a, k, v) VALUES ($1, $2, $3) ON CONFLICT (a, k) DO UPDATE SET v = excluded.v',
    );
    expect(insert('m', 'k, v, w', [1, 2, 3], { key: 'k', update: ['w'] }).text(question)).toBe(
      'INSERT INTO m (k, v, w) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET w = excluded.w',
    );
  });

  it('build an update of a column list, its condition’s values last', () => {
    const statement = update('r', 'id, s', ['a', 'done'], sql`id = ${'a'}`);
    expect(statement.text(dollar)).toBe('UPDATE r SET id = $1, s = $2 WHERE id = $3');
    expect(statement.values).toEqual(['a', 'done', 'a']);
  });

  it('refuse an insert whose values do not match its columns, naming the table', () => {
    expect(() => insert('m', 'a, b', [1])).toThrow('insert into m: 2 columns but 1 values');
  });
});
