import { Hono } from 'hono';
import { registeredOrThrow } from '../forged-tools/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { fixedSegments } from './fixed-segments.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';
import { readJsonBody, readQuery } from './request-input.ts';
import { DemoteBodySchema, ForgeBodySchema, ForgedToolsQuerySchema, type ForgedToolView, ImportBodySchema, type PromotionView } from '../wire/index.ts';

/**
 * `/api/tools/forged` (spec/02): list and show (any role; a key sees the tools of the agents it
 * reaches, and shared tools), export; forge and import as an agent, promote, demote (owner).
 * Every forge runs as the agent: the same checks, tests and judge as its own `forge_tool` call.
 */
export function createForgedToolRoutes(options: { kernel: Kernel }): Hono<HttpEnv> {
  const { kernel } = options;
  const tools = (c: Parameters<typeof kernelOf>[0]) => kernelOf(c, kernel).forgedTools;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    const { agent } = readQuery(c, ForgedToolsQuerySchema);
    return c.json((await tools(c).list(agent === undefined ? {} : { agent })) satisfies ForgedToolView[]);
  });

  routes.post('/', async (c) => {
    const caller = kernelOf(c, kernel);
    caller.require('forge tools');
    const body = await readJsonBody(c, ForgeBodySchema);
    return c.json(registeredOrThrow(await caller.forgedTools.forge(body.agent, body.request, c.get('deadline').signal)), 201);
  });

  routes.post(
    '/:action',
    fixedSegments('action', {
      import: async (c) => {
        const caller = kernelOf(c, kernel);
        caller.require('import tools');
        const body = await readJsonBody(c, ImportBodySchema);
        return c.json(registeredOrThrow(await caller.forgedTools.import(body.agent, body.document, c.get('deadline').signal)), 201);
      },
    }),
  );

  routes.get('/:id', async (c) => c.json((await tools(c).get(c.req.param('id'))) satisfies ForgedToolView));

  routes.get('/:id/export', async (c) => {
    const { tool, document } = await tools(c).export(c.req.param('id'));
    c.header('content-disposition', `attachment; filename="${tool.name}.emergent-tool.yaml"`);
    return c.body(document, 200, { 'content-type': 'application/yaml; charset=utf-8' });
  });

  routes.post('/:id/promote', async (c) => c.json((await tools(c).promote(c.req.param('id'))) satisfies PromotionView));

  routes.post('/:id/demote', async (c) => {
    const caller = kernelOf(c, kernel);
    caller.require('demote forged tools');
    const length = c.req.header('content-length');
    const { reason } = length === undefined || length === '0' ? {} : await readJsonBody(c, DemoteBodySchema);
    return c.json((await caller.forgedTools.demote(c.req.param('id'), reason ?? null)) satisfies ForgedToolView);
  });

  return routes;
}
