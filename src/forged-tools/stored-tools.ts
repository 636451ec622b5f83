import type { ForgedToolRecord } from '../contracts/index.ts';
import { formatIssues } from '../validation/index.ts';
import { type EngineState, retireLive, save } from './engine-state.ts';
import { admit } from './forged-calls.ts';
import { ForgeRequestSchema } from './forge-request.ts';

/** Offers a stored active tool whose program is stored with it; one whose request no longer reads is logged and not offered. */
function holdStored(state: EngineState, record: ForgedToolRecord): void {
  const parsed = ForgeRequestSchema.safeParse(record.request);
  if (!parsed.success) {
    state.logger.error(
      { toolId: record.id, problem: formatIssues(parsed.error, { style: 'json' }).join('; ') },
      `stored forged tool "${record.name}" is invalid; it is not offered`,
    );
    return;
  }
  admit(state, { record, request: parsed.data });
}

/** Loads the stored tools at boot (see `EmergentEngine.load`). */
export async function loadStored(state: EngineState, options: { othersAlive?: boolean } = {}): Promise<void> {
  for (const record of await state.options.store.forgedTools.list({ status: 'active' })) {
    if (record.mode === 'sandbox' && !record.sourcePersisted) {
      if (options.othersAlive === true) continue;
      record.status = 'retired';
      record.statusReason = 'its source was kept only in memory ([emergent].persist_sandbox_source = false), so it ended with the process';
      await save(state, record);
      continue;
    }
    holdStored(state, record);
  }
}

/** Holds a tool as another node stored it (see `EmergentEngine.sync`). */
export async function syncStored(state: EngineState, toolId: string): Promise<void> {
  const record = await state.options.store.forgedTools.get(toolId);
  const held = state.live.get(toolId);
  // Forged here with its source in this process only: the record changed, the program stays.
  if (held !== undefined && state.memorySource.has(toolId)) {
    if (record?.status === 'active') held.record = record;
    else retireLive(state, held);
    return;
  }
  if (held !== undefined) retireLive(state, held);
  if (record === undefined || record.status !== 'active' || (record.mode === 'sandbox' && !record.sourcePersisted)) return;
  holdStored(state, record);
}
