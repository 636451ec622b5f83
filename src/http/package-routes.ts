import { Hono } from 'hono';
import { z } from 'zod';
import { mayReachAgent, type Principal } from '../access/index.ts';
import { AccessDeniedError } from '../errors/index.ts';
import type { PackageService } from '../packages/index.ts';
import { type HttpEnv, principalOf, requireOwner } from './http-context.ts';
import { readJsonBody, readQuery } from './request-input.ts';

/** The body of `POST /api/packages` and `POST /api/packages/check`. */
export const InstallBodySchema = z.strictObject({
  /** A package folder or `.tgz` on the daemon's machine, an install code, or `@org/agents/name[@version]`. */
  source: z.string().min(1, { error: 'expected a package folder, a .tgz, an install code or @org/agents/name' }),
  /** `path=value` overrides of the package's `defaults.configurable` paths. */
  settings: z.array(z.string()).default([]),
  /** The `digest` of the plan the owner agreed to (from `/check`): a package that changed since is refused (409). */
  digest: z.string().regex(/^[0-9a-f]{64}$/, { error: 'expected the digest of a plan from POST /api/packages/check' }).optional(),
});

/** The body of `POST /api/packages/:slug/bindings/:binding/run`. */
export const RunBodySchema = z.strictObject({ inputs: z.record(z.string(), z.json()).default({}) });

const RunsQuerySchema = z.strictObject({
  package: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});


/** A package's agent is named by its slug: a user key reads and runs only the packages its agents patterns match. */
function reachPackage(principal: Principal, slug: string): void {
  if (!mayReachAgent(principal, slug)) throw new AccessDeniedError(`the key "${principal.name}" may not reach package "${slug}"; its [[auth.keys]].agents patterns do not match its agent`);
}

/**
 * `/api/packages` (spec/04): list and show (any role; a user key only the packages whose agent
 * it reaches), check and install, uninstall (owner), run a binding (owner, or a user key that
 * reaches the package; not a viewer), and the runs.
 */
export function createPackageRoutes(options: { packages: PackageService }): Hono<HttpEnv> {
  const { packages } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    const principal = principalOf(c);
    return c.json((await packages.list()).filter((view) => mayReachAgent(principal, view.slug)));
  });

  routes.post('/check', async (c) => {
    requireOwner(principalOf(c), 'check packages for install');
    const body = await readJsonBody(c, InstallBodySchema);
    return c.json(await packages.check(body.source, body.settings));
  });

  routes.post('/', async (c) => {
    requireOwner(principalOf(c), 'install packages');
    const body = await readJsonBody(c, InstallBodySchema);
    return c.json(await packages.install(body.source, body.settings, body.digest), 201);
  });

  routes.get('/runs', async (c) => {
    const principal = principalOf(c);
    const query = readQuery(c, RunsQuerySchema);
    if (query.package !== undefined) reachPackage(principal, query.package);
    const runs = await packages.runs({ ...(query.package === undefined ? {} : { package: query.package }), ...(query.limit === undefined ? {} : { limit: query.limit }) });
    return c.json(runs.filter((run) => mayReachAgent(principal, run.package)));
  });

  routes.get('/:slug', async (c) => {
    const slug = c.req.param('slug');
    reachPackage(principalOf(c), slug);
    return c.json(await packages.show(slug));
  });

  routes.get('/:slug/runs', async (c) => {
    const slug = c.req.param('slug');
    reachPackage(principalOf(c), slug);
    const { limit } = readQuery(c, RunsQuerySchema.pick({ limit: true }));
    return c.json(await packages.runs({ package: slug, ...(limit === undefined ? {} : { limit }) }));
  });

  routes.delete('/:slug', async (c) => {
    requireOwner(principalOf(c), 'uninstall packages');
    return c.json(await packages.uninstall(c.req.param('slug')));
  });

  routes.post('/:slug/bindings/:binding/run', async (c) => {
    const principal = principalOf(c);
    const slug = c.req.param('slug');
    if (principal.role === 'viewer') throw new AccessDeniedError(`a viewer key ("${principal.name}") may not run package bindings`);
    reachPackage(principal, slug);
    const length = c.req.header('content-length');
    const hasBody = length === undefined ? c.req.header('transfer-encoding') !== undefined : length !== '0';
    const { inputs } = hasBody ? await readJsonBody(c, RunBodySchema) : { inputs: {} };
    return c.json(await packages.run(slug, c.req.param('binding'), inputs));
  });

  return routes;
}
