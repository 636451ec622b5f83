/**
 * A PostgreSQL URL as it may be shown: the user, host, port and database, never the password
 * (neither the URL's own nor a `password=` query parameter). Anything that does not parse as a
 * URL is shown as `(an unreadable database URL)`, since it may hold a password.
 *
 * @example
 * redactDatabaseUrl('postgres://loom:s3cret@db.internal:5432/loom') // 'postgres://loom@db.internal:5432/loom'
 */
export function redactDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(an unreadable database URL)';
  }
  parsed.password = '';
  for (const name of [...parsed.searchParams.keys()]) {
    if (name.toLowerCase() === 'password') parsed.searchParams.set(name, '***');
  }
  return parsed.toString();
}
