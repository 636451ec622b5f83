import type { A2aPushConfigRecord, A2aPushConfigRepository, TaskQuery, TaskRecord, TaskRepository } from '../contracts/index.ts';

/** An A2A task as the store holds it (the contract's `TaskRecord`). */
export type A2aTaskRecord = TaskRecord;
/** What a task listing asks for. */
export type A2aTaskQuery = TaskQuery;
/** Where A2A tasks are kept: the store's `tasks` domain. */
export type A2aTaskRepository = TaskRepository;

/** {@link A2aTaskRepository} in memory. */
export class InMemoryA2aTaskRepository implements A2aTaskRepository {
  readonly #tasks = new Map<string, A2aTaskRecord>();

  get(id: string): Promise<A2aTaskRecord | undefined> {
    const record = this.#tasks.get(id);
    return Promise.resolve(record === undefined ? undefined : structuredClone(record));
  }

  put(record: A2aTaskRecord): Promise<void> {
    const existing = this.#tasks.get(record.id);
    this.#tasks.set(record.id, structuredClone({ ...record, createdAt: existing?.createdAt ?? record.createdAt }));
    return Promise.resolve();
  }

  delete(id: string): Promise<void> {
    this.#tasks.delete(id);
    return Promise.resolve();
  }

  count(): Promise<number> {
    return Promise.resolve(this.#tasks.size);
  }

  oldestFinished(): Promise<string | undefined> {
    let oldest: A2aTaskRecord | undefined;
    for (const record of this.#tasks.values()) {
      if (record.finished && (oldest === undefined || record.createdAt < oldest.createdAt)) oldest = record;
    }
    return Promise.resolve(oldest?.id);
  }

  list(query: A2aTaskQuery): Promise<{ records: A2aTaskRecord[]; total: number }> {
    const matching = [...this.#tasks.values()]
      .filter(
        (record) =>
          (query.agent === undefined || record.agent === query.agent) &&
          (query.contextId === undefined || record.contextId === query.contextId) &&
          (query.state === undefined || record.state === query.state) &&
          (query.updatedAfter === undefined || record.updatedAt >= query.updatedAfter),
      )
      .reverse()
      .sort((a, b) => b.updatedAt - a.updatedAt);
    return Promise.resolve({
      records: matching.slice(query.offset, query.offset + query.limit).map((record) => structuredClone(record)),
      total: matching.length,
    });
  }
}

/** {@link A2aPushConfigRepository} in memory (configs are not deleted with their task here). */
export class InMemoryA2aPushConfigRepository implements A2aPushConfigRepository {
  readonly #configs = new Map<string, A2aPushConfigRecord>();

  put(record: A2aPushConfigRecord): Promise<void> {
    const key = `${record.taskId}\u0000${record.id}`;
    const existing = this.#configs.get(key);
    this.#configs.set(key, structuredClone({ ...record, createdAt: existing?.createdAt ?? record.createdAt }));
    return Promise.resolve();
  }

  get(taskId: string, id: string): Promise<A2aPushConfigRecord | undefined> {
    const record = this.#configs.get(`${taskId}\u0000${id}`);
    return Promise.resolve(record === undefined ? undefined : structuredClone(record));
  }

  list(taskId: string): Promise<A2aPushConfigRecord[]> {
    const records = [...this.#configs.values()].filter((record) => record.taskId === taskId).sort((a, b) => a.createdAt - b.createdAt);
    return Promise.resolve(records.map((record) => structuredClone(record)));
  }

  delete(taskId: string, id: string): Promise<boolean> {
    return Promise.resolve(this.#configs.delete(`${taskId}\u0000${id}`));
  }
}
