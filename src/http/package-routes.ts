import { Hono } from 'hono';
import type { PackageService } from '../packages/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { fixedSegments } from './fixed-segments.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';
import { readJsonBody, readQuery } from './request-input.ts';
import {
  InstallBodySchema,
  PackageRunsQuerySchema,
  type PackageRunView,
  type PackageView,
  RunBodySchema,
  RunsOfPackageQuerySchema,
  SkillInstallBodySchema,
} from '../wire/index.ts';

/**
 * `/api/packages` (spec/04): list and show (any role; a user key only the packages whose agent
 * it reaches), check and install, uninstall (owner), run a binding (owner, or a user key that
 * reaches the package; not a viewer), and the runs. A package's agent is named by its slug: the
 * kernel judges a package as it judges its agent.
 */
export function createPackageRoutes(options: { packages: PackageService; kernel: Kernel }): Hono<HttpEnv> {
  const { packages, kernel } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    const caller = kernelOf(c, kernel);
    return c.json((await packages.list()).filter((view) => caller.reaches(view.slug)) satisfies PackageView[]);
  });

  routes.post('/', async (c) => {
    kernelOf(c, kernel).require('install packages');
    const body = await readJsonBody(c, InstallBodySchema);
    return c.json(await packages.install(body.source, body.settings, body.digest), 201);
  });

  // `check` and `skills`, `runs`: fixed segments beside `/:slug/…`, routed as one parameter (fixed-segments.ts).
  routes.post(
    '/:segment',
    fixedSegments('segment', {
      check: async (c) => {
        kernelOf(c, kernel).require('check packages for install');
        const body = await readJsonBody(c, InstallBodySchema);
        return c.json(await packages.check(body.source, body.settings));
      },
      skills: async (c) => {
        kernelOf(c, kernel).require('install packages');
        const body = await readJsonBody(c, SkillInstallBodySchema);
        return c.json(await packages.installSkill(body.code), 201);
      },
    }),
  );

  routes.get(
    '/:slug',
    fixedSegments<'/:slug'>(
      'slug',
      {
        runs: async (c) => {
          const caller = kernelOf(c, kernel);
          const query = readQuery(c, PackageRunsQuerySchema);
          if (query.package !== undefined) caller.requirePackage('read packages', query.package);
          const runs = await packages.runs({
            ...(query.package === undefined ? {} : { package: query.package }),
            ...(query.limit === undefined ? {} : { limit: query.limit }),
          });
          return c.json(runs.filter((run) => caller.reaches(run.package)) satisfies PackageRunView[]);
        },
      },
      async (c) => {
        const slug = c.req.param('slug');
        kernelOf(c, kernel).requirePackage('read packages', slug);
        return c.json((await packages.show(slug)) satisfies PackageView);
      },
    ),
  );

  routes.get('/:slug/runs', async (c) => {
    const slug = c.req.param('slug');
    kernelOf(c, kernel).requirePackage('read packages', slug);
    const { limit } = readQuery(c, RunsOfPackageQuerySchema);
    return c.json((await packages.runs({ package: slug, ...(limit === undefined ? {} : { limit }) })) satisfies PackageRunView[]);
  });

  routes.delete('/:slug', async (c) => {
    kernelOf(c, kernel).require('uninstall packages');
    return c.json(await packages.uninstall(c.req.param('slug')));
  });

  routes.post('/:slug/bindings/:binding/run', async (c) => {
    const slug = c.req.param('slug');
    kernelOf(c, kernel).requirePackage('run package bindings', slug);
    const length = c.req.header('content-length');
    const hasBody = length === undefined ? c.req.header('transfer-encoding') !== undefined : length !== '0';
    const { inputs } = hasBody ? await readJsonBody(c, RunBodySchema) : { inputs: {} };
    return c.json((await packages.run(slug, c.req.param('binding'), inputs)) satisfies PackageRunView);
  });

  return routes;
}
