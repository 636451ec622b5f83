/**
 * Imports a peer framework by name from this folder's own node_modules (installed by
 * `bench/peers.ts` on demand, never by the project's install), so the project's type check and
 * tests never need them. What it answers is untyped: the bench names what it calls.
 */
export function loadPeer(name: string): Promise<unknown> {
  return import(name);
}
