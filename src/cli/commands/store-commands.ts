import type { Command } from 'commander';
import { isPostgresUrl, POSTGRES_URL_EXPECTED, resolveLoomHome } from '../../config/index.ts';
import { readDaemonFile } from '../../daemon/index.ts';
import { UsageError } from '../../errors/index.ts';
import { copySqliteToPostgres, type StoreCopyReport } from '../../store/index.ts';
import { type CliIo, EXIT, ExitStatus } from '../cli-io.ts';
import { formatTable } from '../format.ts';

/** `--to`: a PostgreSQL URL. The value is never repeated: it may hold a password. */
function parseTargetUrl(value: string): string {
  const url = value.trim();
  if (!isPostgresUrl(url)) throw new UsageError(`--to: ${POSTGRES_URL_EXPECTED} (the value is not shown: it may hold a password)`);
  return url;
}

/** The report of `loom store migrate` as a table, with what to do next (or what went wrong). */
export function formatStoreCopyReport(report: StoreCopyReport, configPath: string): string {
  const table = formatTable(
    ['TABLE', 'ROWS', 'CHECKSUM'],
    report.tables.map((row) => [
      row.table,
      row.sqliteRows === row.postgresRows ? String(row.sqliteRows) : `${row.sqliteRows} in SQLite, ${row.postgresRows} in PostgreSQL`,
      row.ok ? 'ok' : 'differs',
    ]),
  );
  if (!report.ok) {
    const differing = report.tables.filter((row) => !row.ok).map((row) => row.table);
    return `${table}\nThe copy did not match in ${differing.join(', ')}: nothing was written to ${report.target} (the copy was rolled back).\n`;
  }
  const rows = report.tables.reduce((sum, row) => sum + row.sqliteRows, 0);
  return (
    `${table}\n` +
    `Copied ${report.source} into ${report.target}: ${report.tables.length} tables, ${rows} rows; every count and checksum matched.\n\n` +
    'Next:\n' +
    `  1. Point this home at the database (the URL with its password): in ${configPath} set\n` +
    `       [store]\n       url = "${report.target}"\n` +
    '     or set LOOM_DATABASE_URL=… in the environment of the daemon and of loom commands (it wins).\n' +
    '  2. Start the daemon: loom start\n' +
    `The SQLite file ${report.source} is left as it was: remove it once you no longer need it.\n`
  );
}

/** `loom store migrate`: moves a home's SQLite store into PostgreSQL. */
export function registerStoreCommands(program: Command, io: CliIo): void {
  const store = program
    .command('store')
    .description("the store: move a home's SQLite store into PostgreSQL")
    .addHelpText('after', '\nExample:\n  $ loom stop\n  $ loom store migrate --to postgres://loom:secret@db.example.com:5432/loom\n');
  store
    .command('migrate')
    .description("copy this home's SQLite store (LOOM_HOME/data/loom.db) into an empty PostgreSQL database, verified by row counts and checksums per table")
    .requiredOption('--to <url>', 'the PostgreSQL database: postgres://user:password@host:port/database', parseTargetUrl)
    .option(
      '--json',
      'print the report as JSON: { source, target, tables: [{ table, sqliteRows, postgresRows, sqliteChecksum, postgresChecksum, ok }], ok, eventSeq, … }',
    )
    .addHelpText(
      'after',
      '\nThe daemon must be stopped. The database must hold no Loom data; its tables are created when missing.\n' +
        'Everything is copied in one transaction, committed only when every table matches; the SQLite file is not changed.\n\n' +
        'Example:\n  $ loom stop\n  $ loom store migrate --to postgres://loom:secret@db.example.com:5432/loom\n',
    )
    .action(async (options: { to: string; json?: boolean }) => {
      const home = resolveLoomHome(io.env, io.cwd);
      const daemon = await readDaemonFile(home);
      if (daemon !== undefined) {
        throw new UsageError(
          `cannot move the store of ${home.root}: its daemon is running (pid ${daemon.pid}, ${daemon.url}); stop the daemon first (loom stop), then run this again`,
        );
      }
      if (io.interactive === true) io.stderr(`(copying ${home.databasePath}: this takes a while for a large store)\n`);
      const report = await copySqliteToPostgres({ sqlitePath: home.databasePath, url: options.to });
      io.stdout(options.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatStoreCopyReport(report, home.configPath));
      if (!report.ok) throw new ExitStatus(EXIT.failure);
    });
}
