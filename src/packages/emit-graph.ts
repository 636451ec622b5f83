import { type AgentJson, type EmitEdge, findEmitCycle } from './package-schema.ts';

/** A package as the emit graph sees it. */
export interface GraphPackage {
  slug: string;
  agentJson: AgentJson;
}

/**
 * The namespaced event a binding's source names (spec/04 "Event namespacing"): an emit of its
 * own package named bare (`briefing.ready` in `chief-of-staff` is `chief-of-staff.briefing.ready`),
 * or another package's in full (`chief-of-staff.briefing.ready`).
 */
export function namespacedSource(pkg: GraphPackage, source: string): string {
  const own = Object.values(pkg.agentJson.workflows).some((binding) => binding.emit === source);
  return own ? `${pkg.slug}.${source}` : source;
}

/**
 * Checks the emit graph of `packages` (the installed ones and the one being installed): every
 * event source names an emit some binding makes, and no chain of emits leads back to where it
 * started. Returns one message per problem (empty when all is well).
 */
export function emitGraphProblems(packages: readonly GraphPackage[]): string[] {
  const problems: string[] = [];
  const emitters = new Map<string, string[]>();
  for (const pkg of packages) {
    for (const [name, binding] of Object.entries(pkg.agentJson.workflows)) {
      if (binding.emit === undefined) continue;
      const event = `${pkg.slug}.${binding.emit}`;
      emitters.set(event, [...(emitters.get(event) ?? []), `${pkg.slug}/${name}`]);
    }
  }
  const edges: EmitEdge[] = [];
  for (const pkg of packages) {
    for (const [name, binding] of Object.entries(pkg.agentJson.workflows)) {
      if (binding.trigger.type !== 'event') continue;
      binding.trigger.sources.forEach((source, index) => {
        const event = namespacedSource(pkg, source);
        const from = emitters.get(event);
        if (from === undefined) {
          problems.push(
            `package "${pkg.slug}": agent.json: workflows.${name}.trigger.sources[${index}]: no installed binding emits "${source}" (as "${event}")`,
          );
          return;
        }
        for (const emitter of from) edges.push({ from: emitter, event, to: `${pkg.slug}/${name}` });
      });
    }
  }
  const cycle = findEmitCycle(edges);
  if (cycle !== undefined) problems.push(`emit chains must be acyclic, but this one returns to its start: ${cycle.join(' → ')}`);
  return problems;
}
