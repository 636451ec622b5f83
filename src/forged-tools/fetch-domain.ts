/**
 * Whether a `fetch_domain_allowlist` entry covers a host (or another entry): `api.x.com` covers
 * itself only; `*.x.com` covers every subdomain of x.com (and `*.a.x.com`), not x.com itself.
 */
export function fetchDomainCovers(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  const h = host.toLowerCase();
  if (!p.startsWith('*.')) return p === h;
  const base = p.slice(1);
  return h.endsWith(base) && h.length > base.length;
}
