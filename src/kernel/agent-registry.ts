import { AgentNotFoundError } from '../errors/index.ts';
import type { AgentEntry } from './agent-entry.ts';

/**
 * The live agents, by id and by name. Names are unique among live agents; a name can be
 * reserved while a spawn commits, so two spawns of one name cannot both pass the check.
 */
export class AgentRegistry {
  readonly #byId = new Map<string, AgentEntry>();
  readonly #byName = new Map<string, string>();
  readonly #reserved = new Set<string>();

  get size(): number {
    return this.#byId.size;
  }

  /** The id holding `name`, or "reserved" while a spawn of that name is in flight. */
  holderOf(name: string): string | undefined {
    return this.#byName.get(name) ?? (this.#reserved.has(name) ? 'reserved' : undefined);
  }

  reserve(name: string): void {
    this.#reserved.add(name);
  }

  release(name: string): void {
    this.#reserved.delete(name);
  }

  add(entry: AgentEntry): void {
    this.#byId.set(entry.id, entry);
    this.#byName.set(entry.name, entry.id);
    if (entry.parentId !== null) this.#byId.get(entry.parentId)?.children.add(entry.id);
  }

  remove(id: string): void {
    const entry = this.#byId.get(id);
    if (entry === undefined) return;
    this.#byId.delete(id);
    this.#byName.delete(entry.name);
    if (entry.parentId !== null) this.#byId.get(entry.parentId)?.children.delete(id);
  }

  find(id: string): AgentEntry | undefined {
    return this.#byId.get(id);
  }

  /** The agent with this id, else with this name; undefined when there is none. */
  lookup(reference: string): AgentEntry | undefined {
    return this.#byId.get(reference) ?? this.#byId.get(this.#byName.get(reference) ?? '');
  }

  /**
   * The agent with this id, else with this name.
   * @throws {AgentNotFoundError} when there is none.
   */
  resolve(reference: string): AgentEntry {
    const entry = this.lookup(reference);
    if (entry === undefined) throw new AgentNotFoundError(reference);
    return entry;
  }

  /** The agent and all its descendants, parents before children. */
  subtree(root: AgentEntry): AgentEntry[] {
    const result: AgentEntry[] = [];
    const stack = [root];
    while (stack.length > 0) {
      const entry = stack.pop();
      if (entry === undefined) break;
      result.push(entry);
      for (const childId of [...entry.children].reverse()) {
        const child = this.#byId.get(childId);
        if (child !== undefined) stack.push(child);
      }
    }
    return result;
  }

  /** The live agents above an agent, its parent first. */
  ancestors(entry: AgentEntry): AgentEntry[] {
    const above: AgentEntry[] = [];
    for (
      let current = entry.parentId === null ? undefined : this.#byId.get(entry.parentId);
      current !== undefined;
      current = current.parentId === null ? undefined : this.#byId.get(current.parentId)
    )
      above.push(current);
    return above;
  }

  /** Every live agent, in spawn order. */
  list(): AgentEntry[] {
    return [...this.#byId.values()];
  }
}
