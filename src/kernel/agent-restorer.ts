import type { AgentRecord, Logger } from '../contracts/index.ts';
import { capabilitiesFromManifest, ManifestSchema, withoutRetiredKeys } from '../manifest/index.ts';
import { formatIssues } from '../validation/index.ts';
import type { AgentEntry, AgentRef } from './agent-entry.ts';

/**
 * A stored agent this kernel does not hold because its manifest does not validate, and the
 * lifetime cap read from its stored record, which still covers the agents below it.
 */
export interface UnheldAgent {
  /** When it was left out: when Loom started, or when this node would have adopted it from another's store. */
  skipped: 'start' | 'adoption';
  /** `[capabilities].econ_spend` as stored: its number, undefined when there is none, null when it does not read as one. */
  cap: number | undefined | null;
}

/** `[capabilities].econ_spend` of a stored manifest that may not validate (see `UnheldAgent.cap`). */
export function storedCap(manifest: Record<string, unknown>): number | undefined | null {
  const block = manifest['capabilities'];
  if (block === undefined) return undefined;
  if (typeof block !== 'object' || block === null || Array.isArray(block)) return null;
  const cap = (block as Record<string, unknown>)['econ_spend'];
  if (cap === undefined) return undefined;
  return typeof cap === 'number' && Number.isFinite(cap) && cap >= 0 ? cap : null;
}

/**
 * Reads stored agents back as entries the kernel holds, validating their manifests as for any
 * spawn; tells the log once per agent of stored keys this Loom no longer reads.
 */
export class AgentRestorer {
  readonly #logger: Logger;
  /** The agents whose stored manifest's retired keys the log has been told of (once a process). */
  readonly #toldRetired = new Set<string>();
  /** The stored agents whose manifest did not validate the last time they were read, by id. */
  readonly #unheld = new Map<string, UnheldAgent>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /**
   * The entry `record` stands for, below `ancestors` (see `storedAncestors`), or why it cannot be
   * held (its manifest no longer validates): then `unheld` tells what is known of its cap, and
   * that it was skipped at `when` (at start, or when this node read another's change).
   */
  restore(record: AgentRecord, ancestors: readonly AgentRef[], when: UnheldAgent['skipped']): AgentEntry | string {
    // A name stored before names lost the dot (0006) is kept: the rest is validated as for any.
    const dotted = typeof record.manifest['name'] === 'string' && record.manifest['name'].includes('.') ? record.manifest['name'] : undefined;
    // Keys an earlier Loom stored and ignored, refused now, are taken out: the agent runs as it did.
    const { manifest: stored, dropped } = withoutRetiredKeys(record.manifest);
    const parsed = ManifestSchema.safeParse(dotted === undefined ? stored : { ...stored, name: dotted.replaceAll('.', '-') }, { reportInput: true });
    if (parsed.success && dropped.length > 0 && !this.#toldRetired.has(record.id)) {
      this.#toldRetired.add(record.id);
      this.#logger.warn(
        { agentId: record.id, dropped },
        `agent "${record.name}" was stored with what this Loom refuses and no Loom acted on; it runs without it: ${dropped.join('; ')}`,
      );
    }
    if (!parsed.success) {
      this.#unheld.set(record.id, { skipped: when, cap: storedCap(record.manifest) });
      return formatIssues(parsed.error, { style: 'toml' }).join('; ');
    }
    this.#unheld.delete(record.id);
    const manifest = dotted === undefined ? parsed.data : { ...parsed.data, name: dotted };
    return {
      id: record.id,
      name: record.name,
      state: record.state,
      parentId: record.parentId,
      ancestors,
      children: new Set(),
      sessionId: record.sessionId,
      manifest,
      capabilities: capabilitiesFromManifest(manifest.capabilities, manifest.profile),
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    };
  }

  /** The stored agent `agentId` if its manifest did not validate when last read (see `restore`); undefined otherwise. */
  unheld(agentId: string): UnheldAgent | undefined {
    return this.#unheld.get(agentId);
  }

  /** Forgets agents no longer stored (killed). */
  forget(agentIds: readonly string[]): void {
    for (const agentId of agentIds) this.#unheld.delete(agentId);
  }
}

/**
 * The agents above an agent whose parent is `parentId`, its parent first, by the stored parent
 * links: `find` reads one agent (held here or stored), whatever its manifest. A parent is stored
 * as long as its children are (a kill deletes the agent with every agent below it).
 */
export async function storedAncestors(
  parentId: string | null,
  find: (id: string) => Pick<AgentRecord, 'id' | 'name' | 'parentId'> | undefined | Promise<Pick<AgentRecord, 'id' | 'name' | 'parentId'> | undefined>,
): Promise<AgentRef[]> {
  const above: AgentRef[] = [];
  for (let id = parentId; id !== null && !above.some((ancestor) => ancestor.id === id);) {
    const parent = await find(id);
    if (parent === undefined) break;
    above.push({ id: parent.id, name: parent.name });
    id = parent.parentId;
  }
  return above;
}
