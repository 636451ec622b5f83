import type { AgentRecord, Logger } from '../contracts/index.ts';
import { capabilitiesFromManifest, ManifestSchema, withoutRetiredKeys } from '../manifest/index.ts';
import { formatIssues } from '../validation/index.ts';
import type { AgentEntry, AgentRef } from './agent-entry.ts';

/**
 * Reads stored agents back as entries the kernel holds, validating their manifests as for any
 * spawn; tells the log once per agent of stored keys this Loom no longer reads.
 */
export class AgentRestorer {
  readonly #logger: Logger;
  /** The agents whose stored manifest's retired keys the log has been told of (once a process). */
  readonly #toldRetired = new Set<string>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /**
   * The entry `record` stands for, below `ancestors` (see `storedAncestors`), or why it cannot be
   * held (its manifest no longer validates).
   */
  restore(record: AgentRecord, ancestors: readonly AgentRef[]): AgentEntry | string {
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
    if (!parsed.success) return formatIssues(parsed.error, { style: 'toml' }).join('; ');
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
