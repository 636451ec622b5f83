import type { LogReader, Tool } from '../contracts/index.ts';
import type { CodeModules } from '../code-modules/index.ts';
import type { CostCatalog, ModelResolver, ModelTarget, ModelTier } from '../models/index.ts';
import type { OfferedSkills } from './agent-skills.ts';
import type { IdentityFile } from './identity-prompt.ts';

/** Who is asking: a person through a door (CLI, HTTP, MCP, A2A) with a role, or another agent. */
export type Caller =
  /** `agents`: for the `user` role, the name patterns of the agents it may message (all when omitted). */
  { kind: 'user'; role: 'owner' | 'user' | 'viewer'; name?: string; agents?: readonly string[] } | { kind: 'agent'; agentId: string; chain: readonly string[] };

/** The owner at the local CLI: the default caller. */
export const OWNER: Caller = { kind: 'user', role: 'owner' };

/** Inter-agent depth limit (spec/01): a chain of agent-to-agent messages stops at 5 levels. */
export const MAX_AGENT_DEPTH = 5;

/** Default context window assumed for a model the runtime knows nothing about. */
export const DEFAULT_CONTEXT_WINDOW_TOKENS = 128_000;

/**
 * What the kernel needs to run agents' turns: models, prices, tools, the environment tools may
 * read (API keys), where workspaces live, and the code modules. Built whole by the composition
 * root (`openHost` in `src/host/open-host.ts`, which the CLI and the daemon both open) and not
 * changed afterwards (but for the default model), so the kernel itself reads no environment.
 */
export interface AgentRuntime {
  readonly resolver: ModelResolver;
  readonly costs: CostCatalog;
  /** The tools, or a function giving the current ones (built-ins plus connected MCP servers'). */
  readonly tools: readonly Tool<never>[] | (() => readonly Tool<never>[]);
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The daemon's recent log records, read by the event-log tools (the daemon keeps them; others need not). */
  readonly logs?: LogReader | undefined;
  /**
   * The model of agents whose manifest has no `[model]`. The one field that changes after the
   * runtime is built: a running daemon follows `[default_model]` in config.toml (decision 0054).
   */
  defaultModel?: ModelTarget;
  /** `[models.aliases]` of config.toml (judge models and packages may name a model by alias). */
  readonly aliases?: Readonly<Record<string, ModelTarget>>;
  /** The model serving each routing tier, for agents with `[routing]` enabled. */
  readonly tiers?: Partial<Record<ModelTier, ModelTarget | undefined>>;
  /** The absolute workspace folder of an agent. */
  workspaceOf(agent: { name: string; workspace: string | undefined }): string;
  /**
   * An absolute path with the symbolic links on the way resolved, as far as the folders exist (the
   * host's file system): a child's workspace is judged and pinned by it. Without it, paths are
   * taken as written.
   */
  readonly realPath?: ((path: string) => string) | undefined;
  /** The modules of code agents (`wasm:`, `python:`); without them such agents cannot run. */
  readonly codeModules?: CodeModules;
  /** The context window of a model, in tokens. */
  contextWindowTokens?(model: ModelTarget): number;
  /**
   * The identity files of a workspace (`SOUL.md`, …), each within its budget, for agents with
   * `generate_identity_files`; those missing are left out. Without it such agents run on their
   * manifest's prompt.
   */
  identityFiles?(workspace: string): Promise<readonly IdentityFile[]>;
  /**
   * The installed skills a manifest's `skills` allowlist offers (all of them for an empty one),
   * with the text for the system prompt within its budget; never throws for a skill it cannot
   * offer (that is a problem in the answer). Without it agents get no skills.
   */
  readonly skills?: ((allowlist: readonly string[]) => Promise<OfferedSkills>) | undefined;
  /**
   * How many model calls of agents may run at once (`[models].max_concurrent_calls`); the others
   * wait, served by their agent's `priority`. Unset: no limit.
   */
  readonly maxConcurrentModelCalls?: number;
}
