import type { Capability } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { ModelTarget, ModelTier } from '../models/index.ts';

/** What `confineChild` is given: the world it checks against, and the parent as it sees it. */

/** What the check needs to know of the world: where workspaces are and which models serve. */
export interface ConfinementContext {
  /** The absolute workspace folder of an agent (the runtime's `workspaceOf`). */
  workspaceOf(agent: { name: string; workspace: string | undefined }): string;
  /** The model of agents without `[model]`. */
  defaultModel?: ModelTarget | undefined;
  /** The models serving routing tiers. */
  tiers?: Partial<Record<ModelTier, ModelTarget | undefined>> | undefined;
  /** Now, in epoch milliseconds: periodic schedules are compared from here. */
  now: number;
  /** `[models.aliases]` of config.toml, for `[emergent]`'s judge models. */
  aliases?: Readonly<Record<string, ModelTarget>> | undefined;
  /**
   * An absolute, normal path with the symbolic links on the way resolved, as far as it exists
   * (the runtime's `realPath`, from the host): workspaces are compared, and a child's pinned, as
   * the file tools will see them. Without it, paths are taken as written.
   */
  realPath?: ((path: string) => string) | undefined;
}

/** The context's `realPath`, or paths taken as written without one. */
export function realPathOf(context: ConfinementContext): (path: string) => string {
  return context.realPath ?? ((path: string) => path);
}

/** The parent as the check sees it: its stored manifest and the capabilities it holds. */
export interface ConfinedParent {
  name: string;
  manifest: Manifest;
  capabilities: readonly Capability[];
}
