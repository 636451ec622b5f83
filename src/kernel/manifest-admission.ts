import { isDeepStrictEqual } from 'node:util';
import { isGranted } from '../capabilities/index.ts';
import type { Capability, Clock } from '../contracts/index.ts';
import { CapabilityDeniedError, CapabilityEscalationError, ModuleUnavailableError } from '../errors/index.ts';
import { capabilitiesFromManifest, codeModuleOf, codeSettingsOf, type Manifest } from '../manifest/index.ts';
import { agentMessageTool, LOG_TOOLS } from '../tools/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import { confineChild, type ConfinementContext } from './child-confinement.ts';

/** The agent types that hand work to their managed agents (spec/03). */
const ORCHESTRATOR_MODULES: ReadonlySet<string> = new Set(['builtin:delegate', 'builtin:workflow']);

/** A manifest as admitted for an agent, and the capabilities it grants. */
export type Admitted = { manifest: Manifest; granted: Capability[] };

/**
 * Where workspaces are when a kernel has no runtime (it runs no tools, so none is ever made):
 * only so that a child's workspace can still be placed inside its parent's.
 */
export function workspaceWithoutRuntime(agent: { name: string; workspace: string | undefined }): string {
  return agent.workspace ?? `/workspaces/${agent.name}`;
}

/** What {@link ManifestAdmission} is built from. */
export interface ManifestAdmissionParts {
  registry: Pick<AgentRegistry, 'find'>;
  clock: Clock;
  runtime: AgentRuntime | undefined;
}

/**
 * What a manifest may hold before it is stored, for a spawn or an update: confined by its parent,
 * its grants consistent with its agent type, its code module there.
 */
export class ManifestAdmission {
  readonly #parts: ManifestAdmissionParts;

  constructor(parts: ManifestAdmissionParts) {
    this.#parts = parts;
  }

  /** What a child's manifest is judged by: the host's workspaces, models and file system. */
  confinementContext(): ConfinementContext {
    const { runtime, clock } = this.#parts;
    return {
      workspaceOf: runtime === undefined ? workspaceWithoutRuntime : (agent) => runtime.workspaceOf(agent),
      defaultModel: runtime?.defaultModel,
      tiers: runtime?.tiers,
      aliases: runtime?.aliases,
      now: clock.now(),
      realPath: runtime?.realPath,
    };
  }

  /**
   * What a manifest may hold, for a spawn or an update: a child confined by its parent in every
   * field that gives power (see `confineChild`), an orchestrator's managed agents covered by its
   * `agent_message` grants and the `agent_message` tool granted, an event-log agent granted its
   * log tools.
   * @throws {CapabilityEscalationError} {CapabilityDeniedError}
   */
  admit(requested: Manifest, parent: AgentEntry | undefined, action: 'spawn' | 'update'): Admitted {
    const { name } = requested;
    const manifest = parent === undefined ? requested : confineChild(parent, requested, this.confinementContext());
    const granted = capabilitiesFromManifest(manifest.capabilities, manifest.profile);
    // An orchestrator reaches its managed agents only by messages its grants cover.
    const managed = manifest.delegate?.managed_agents ?? manifest.workflow?.managed_agents ?? [];
    const unreachable = managed.filter((agent) => !isGranted(granted, { kind: 'agent_message', pattern: agent }));
    if (unreachable.length > 0) {
      const table = manifest.delegate === undefined ? '[workflow]' : '[delegate]';
      throw new CapabilityDeniedError(
        `cannot ${action} "${name}": ${table}.managed_agents names ${unreachable.map((agent) => `"${agent}"`).join(', ')}, which its [capabilities].agent_message does not cover; add ${unreachable.map((agent) => `"${agent}"`).join(', ')} to agent_message`,
      );
    }
    // …and sends them its messages as calls of its agent_message tool (0017).
    if (ORCHESTRATOR_MODULES.has(manifest.module) && !isGranted(granted, { kind: 'tool_invoke', pattern: agentMessageTool.name })) {
      throw new CapabilityDeniedError(
        `cannot ${action} "${name}": a ${manifest.module} agent messages its managed agents with the agent_message tool, which its [capabilities].tools does not grant; add "agent_message" to tools`,
      );
    }
    const code = codeModuleOf(manifest);
    if (code?.kind === 'python') {
      // A script runs as Loom's OS user, not in a sandbox: the power to run its interpreter is granted explicitly.
      const interpreter = codeSettingsOf(manifest).interpreter;
      if (!isGranted(granted, { kind: 'shell_exec', pattern: interpreter })) {
        throw new CapabilityDeniedError(
          `cannot ${action} "${name}": a python: agent runs its script as a process of Loom's user (not in a sandbox), so it needs [capabilities].shell = [${JSON.stringify(interpreter)}], its interpreter`,
        );
      }
      if (manifest.exec_policy?.allow_shell === false) {
        throw new CapabilityDeniedError(`cannot ${action} "${name}": a python: agent runs a process, and its [exec_policy].allow_shell is false`);
      }
    }
    if (manifest.module === 'builtin:eventlog' && !LOG_TOOLS.some((tool) => isGranted(granted, { kind: 'tool_invoke', pattern: tool.name }))) {
      throw new CapabilityDeniedError(
        `cannot ${action} "${name}": an event-log agent reads the daemon's log through its log tools, and its [capabilities].tools grants none of them; add tools = ["get_recent_logs", "search_logs*", "get_log_*"]`,
      );
    }
    return { manifest, granted };
  }

  /**
   * `entry`'s children, and theirs, confined again under `manifest` (what `entry` is to hold):
   * those whose manifest that changes, parents first. A child that would exceed it refuses the
   * update, named with its place under `updated` (the agent being updated). What merges (the exec
   * policy, blocklists, approvals) is what the child holds from now on, so tightening a parent
   * tightens the agents it spawned; what the child holds as its own (an allowlist, a token cap or
   * a limit it inherited at its spawn) refuses a parent that would go below it.
   * @throws {CapabilityEscalationError} naming the descendant that would exceed its parent.
   */
  reconfined(updated: string, entry: AgentEntry, manifest: Manifest, granted: Capability[]): { child: AgentEntry; admitted: Admitted }[] {
    const changed: { child: AgentEntry; admitted: Admitted }[] = [];
    for (const childId of entry.children) {
      const child = this.#parts.registry.find(childId);
      if (child === undefined) continue;
      let admitted: Admitted;
      try {
        admitted = this.admit(child.manifest, { ...entry, manifest, capabilities: granted }, 'update');
      } catch (error) {
        const which = entry.name === updated ? `its child "${child.name}"` : `its descendant "${child.name}" (a child of "${entry.name}")`;
        throw new CapabilityEscalationError(
          `cannot update "${updated}": ${which} would then exceed it (${error instanceof Error ? error.message : String(error)}); update or kill the child first`,
        );
      }
      if (!isDeepStrictEqual(admitted.manifest, child.manifest)) changed.push({ child, admitted });
      changed.push(...this.reconfined(updated, child, admitted.manifest, admitted.granted));
    }
    return changed;
  }

  /**
   * A code agent's module must be there and load before the agent is stored (other agents pass).
   * @throws {ModuleUnavailableError} when this process runs no code modules, or the module's own error.
   */
  async checkCodeModule(manifest: Manifest): Promise<void> {
    if (codeModuleOf(manifest) === undefined) return;
    const modules = this.#parts.runtime?.codeModules;
    if (modules === undefined)
      throw new ModuleUnavailableError(
        `cannot run agent "${manifest.name}": module "${manifest.module}" is a code module, and this Loom runs none in this process`,
      );
    await modules.check(manifest);
  }
}
