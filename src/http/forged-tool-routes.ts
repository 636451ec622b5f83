import { Hono } from 'hono';
import { z } from 'zod';
import { mayReachAgent, type Principal } from '../access/index.ts';
import { forgedToolNotFound, type ForgedToolView, registeredOrThrow } from '../emergent/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { type HttpEnv, principalOf, requireOwner } from './http-context.ts';
import { readJsonBody, readQuery } from './request-input.ts';

/** The body of `POST /api/tools/forged`: forge as `agent`, with spec/02's request. */
export const ForgeBodySchema = z.strictObject({
  agent: z.string().min(1, { error: 'expected the agent to forge as' }),
  request: z.record(z.string(), z.json()),
});

/** The body of `POST /api/tools/forged/import`: an `agentos.emergent-tool.v1` document. */
export const ImportBodySchema = z.strictObject({
  agent: z.string().min(1, { error: 'expected the agent to import into' }),
  document: z.string().min(1, { error: 'expected the exported YAML text' }),
});

const DemoteBodySchema = z.strictObject({ reason: z.string().min(1).optional() });
const ListQuerySchema = z.strictObject({ agent: z.string().min(1).optional() });

/** A key sees the tools of the agents it reaches, and every shared tool. */
function visible(principal: Principal, tool: ForgedToolView): boolean {
  return tool.tier === 'shared' || mayReachAgent(principal, tool.agent);
}

/** The tool asked for as `id`, when the key may see it; else answered as an id no tool has, so a key learns nothing of tools it may not see (their names, their agents, that they exist). */
function reach(principal: Principal, tool: ForgedToolView, id: string): ForgedToolView {
  if (!visible(principal, tool)) throw forgedToolNotFound(id);
  return tool;
}

/**
 * `/api/tools/forged` (spec/02): list and show (any role; a key sees the tools of the agents it
 * reaches, and shared tools), export; forge and import as an agent, promote, demote (owner).
 * Every forge runs as the agent: the same checks, tests and judge as its own `forge_tool` call.
 */
export function createForgedToolRoutes(options: { kernel: Kernel }): Hono<HttpEnv> {
  const { kernel } = options;
  const tools = kernel.forgedTools;
  const routes = new Hono<HttpEnv>();

  routes.get('/', async (c) => {
    const principal = principalOf(c);
    const { agent } = readQuery(c, ListQuerySchema);
    return c.json((await tools.list(agent === undefined ? {} : { agent })).filter((tool) => visible(principal, tool)));
  });

  routes.post('/', async (c) => {
    const principal = principalOf(c);
    requireOwner(principal, 'forge tools');
    const body = await readJsonBody(c, ForgeBodySchema);
    return c.json(registeredOrThrow(await tools.forge(body.agent, body.request, principal.name, c.get('deadline').signal)), 201);
  });

  routes.post('/import', async (c) => {
    const principal = principalOf(c);
    requireOwner(principal, 'import tools');
    const body = await readJsonBody(c, ImportBodySchema);
    return c.json(registeredOrThrow(await tools.import(body.agent, body.document, principal.name, c.get('deadline').signal)), 201);
  });

  routes.get('/:id', async (c) => c.json(reach(principalOf(c), await tools.get(c.req.param('id')), c.req.param('id'))));

  routes.get('/:id/export', async (c) => {
    const tool = reach(principalOf(c), await tools.get(c.req.param('id')), c.req.param('id'));
    c.header('content-disposition', `attachment; filename="${tool.name}.emergent-tool.yaml"`);
    return c.body(await tools.export(tool.id), 200, { 'content-type': 'application/yaml; charset=utf-8' });
  });

  routes.post('/:id/promote', async (c) => {
    const principal = principalOf(c);
    requireOwner(principal, 'promote forged tools');
    return c.json(await tools.promote(c.req.param('id'), principal.name));
  });

  routes.post('/:id/demote', async (c) => {
    const principal = principalOf(c);
    requireOwner(principal, 'demote forged tools');
    const length = c.req.header('content-length');
    const { reason } = length === undefined || length === '0' ? {} : await readJsonBody(c, DemoteBodySchema);
    return c.json(await tools.demote(c.req.param('id'), principal.name, reason ?? null));
  });

  return routes;
}
