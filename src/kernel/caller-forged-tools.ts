import { forgedToolNotFound, type ForgedToolView, type ForgeOutcome } from '../forged-tools/index.ts';
import type { Principal } from '../contracts/index.ts';
import type { Action } from './authority.ts';
import type { Kernel } from './kernel-api.ts';

/** What the forged tools' face needs of the caller's kernel (a `CallerKernel`). */
interface Caller {
  readonly principal: Principal;
  reaches(name: string): boolean;
  require(action: Action): void;
}

/** Forged tools (spec/02) as one principal sees and may change them: `CallerKernel.forgedTools`. */
export interface CallerForgedTools {
  list(options?: { agent?: string }): Promise<ForgedToolView[]>;
  /** @throws the not-found error for a tool the principal may not see, as for an id no tool has. */
  get(id: string): Promise<ForgedToolView>;
  export(id: string): Promise<{ tool: ForgedToolView; document: string }>;
  forge(agent: string, request: unknown, signal?: AbortSignal): Promise<ForgeOutcome>;
  import(agent: string, document: string, signal?: AbortSignal): Promise<ForgeOutcome>;
  promote(id: string): ReturnType<Kernel['forgedTools']['promote']>;
  demote(id: string, reason: string | null): Promise<ForgedToolView>;
}

/** The kernel's forged tools as `caller` sees them: shared ones, and those of the agents it reaches; each change checked against its role. */
export function forgedToolsAs(kernel: Kernel, caller: Caller): CallerForgedTools {
  const sees = (tool: ForgedToolView): boolean => tool.tier === 'shared' || caller.reaches(tool.agent);
  const get = async (id: string): Promise<ForgedToolView> => {
    const tool = await kernel.forgedTools.get(id);
    if (!sees(tool)) throw forgedToolNotFound(id);
    return tool;
  };
  return {
    list: async (options = {}) => (await kernel.forgedTools.list(options)).filter(sees),
    get,
    export: async (id) => {
      const tool = await get(id);
      return { tool, document: await kernel.forgedTools.export(tool.id) };
    },
    forge: (agent, request, signal) => {
      caller.require('forge tools');
      return kernel.forgedTools.forge(agent, request, caller.principal.name, signal);
    },
    import: (agent, document, signal) => {
      caller.require('import tools');
      return kernel.forgedTools.import(agent, document, caller.principal.name, signal);
    },
    promote: (id) => {
      caller.require('promote forged tools');
      return kernel.forgedTools.promote(id, caller.principal.name);
    },
    demote: (id, reason) => {
      caller.require('demote forged tools');
      return kernel.forgedTools.demote(id, caller.principal.name, reason);
    },
  };
}
