import { z } from 'zod';
import type { ForgedToolRecord, JsonObject } from '../contracts/index.ts';
import { formatIssues, yamlLibrary } from '../validation/index.ts';

/** The format name of an exported forged tool (spec/02). */
export const EXPORT_SCHEMA = 'agentos.emergent-tool.v1';

const ExportSchema = z.looseObject({
  schema: z.literal(EXPORT_SCHEMA, { error: `expected schema: ${EXPORT_SCHEMA}` }),
  name: z.string(),
  redacted: z.boolean().default(false),
  tool: z.record(z.string(), z.json()),
});

/**
 * A forged tool as a portable YAML document: the forge request, and its provenance (agent,
 * tier, verdicts, stats). A sandbox tool whose source was not persisted is exported redacted:
 * without its code, with the code's hash, marked `redacted: true` — useful for audit and review,
 * refused on import.
 */
export function exportDocument(record: ForgedToolRecord): string {
  const redacted = record.mode === 'sandbox' && !record.sourcePersisted;
  const document = {
    schema: EXPORT_SCHEMA,
    name: record.name,
    redacted,
    tool: record.request,
    provenance: {
      agent: record.agentName,
      tier: record.tier,
      origin: record.origin,
      codeHash: record.codeHash,
      createdAt: new Date(record.createdAt).toISOString(),
      verdicts: record.verdicts,
      stats: record.stats,
    },
  };
  return yamlLibrary().stringify(document, { lineWidth: 0 });
}

/** An export read back: the forge request to test and judge again, or why it cannot be imported. */
export type ParsedExport = { ok: true; request: JsonObject } | { ok: false; reason: string; name?: string };

/** Reads an exported document (never throws). */
export function parseExport(text: string): ParsedExport {
  let raw: unknown;
  try {
    raw = yamlLibrary().parse(text, { maxAliasCount: 0 });
  } catch (error) {
    return { ok: false, reason: `not YAML: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = ExportSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) return { ok: false, reason: `not an ${EXPORT_SCHEMA} document: ${formatIssues(parsed.error, { style: 'json' }).join('; ')}` };
  const { name, redacted, tool } = parsed.data;
  if (redacted) {
    return {
      ok: false,
      name,
      reason: `"${name}" was exported redacted: its sandbox source was not persisted ([emergent].persist_sandbox_source = false in the exporting agent), so there is no code to run; export it from an agent that persists its source`,
    };
  }
  return { ok: true, request: tool };
}
