/**
 * Why a schema is refused when one value would be checked against the same subschema more than
 * MAX_SCHEMA_REPEATS times: where the walks to it part (see schema-bounds.ts).
 */
import { describePath, descend, type Edge, edgesOf, type Label, type SchemaNode } from './schema-automaton.ts';
import { LIMITS, MAX_SCHEMA_REPEATS, SATURATED } from './schema-limits.ts';
import { SchemaRefusedError } from './schema-refused-error.ts';

/** A value checked against one subschema too many times: the steps to it, the subschema, how many times, and the automaton's order. */
export interface RepeatedCheck {
  labels: readonly Label[];
  root: number;
  target: number;
  count: number;
  /** The reachable nodes, each after those it applies to the same value. */
  order: readonly number[];
  reachable: readonly number[];
}

/**
 * The refusal of a schema under which one value meets `target` `count` times (more than
 * MAX_SCHEMA_REPEATS), naming where the walks to it part: a combinator inside a `$ref` cycle
 * when there is one (its work grows with every level of the value), else the first.
 */
export function repeatsRefusal(nodes: readonly SchemaNode[], { labels, root, target, count, order, reachable }: RepeatedCheck): SchemaRefusedError {
  const layers = labels.length;
  const size = nodes.length;
  // Walks from (layer, node) to the target at the last layer, and from the root to (layer, node).
  const onward: Float64Array[] = [];
  for (let layer = layers; layer >= 0; layer -= 1) {
    const counts = new Float64Array(size);
    const below = onward[layer + 1];
    for (const node of order) {
      const schema = nodes[node] as SchemaNode;
      let walks = layer === layers && node === target ? 1 : 0;
      for (const { target: inner } of schema.same) walks += counts[inner] as number;
      if (below !== undefined) for (const { target: part } of descend(schema, labels[layer] as Label)) walks += below[part] as number;
      counts[node] = Math.min(walks, 1e12);
    }
    onward[layer] = counts;
  }
  const reverse = [...order].reverse();
  const inCycle = cyclicNodes(nodes, reachable);
  let first: { node: number; choices: Edge[]; layer: number } | undefined;
  let cyclic: typeof first;
  let arriving = new Float64Array(size);
  arriving[root] = 1;
  for (let layer = 0; layer <= layers && cyclic === undefined; layer += 1) {
    const here = onward[layer] as Float64Array;
    const below = onward[layer + 1];
    const next = new Float64Array(size);
    for (const node of reverse) {
      if ((arriving[node] as number) === 0) continue;
      const schema = nodes[node] as SchemaNode;
      const same = schema.same.filter(({ target: inner }) => (here[inner] as number) > 0);
      const parts = below === undefined ? [] : descend(schema, labels[layer] as Label).filter(({ target: part }) => (below[part] as number) > 0);
      for (const { target: inner } of schema.same) arriving[inner] = (arriving[inner] as number) + (arriving[node] as number);
      if (below !== undefined)
        for (const { target: part } of descend(schema, labels[layer] as Label)) next[part] = (next[part] as number) + (arriving[node] as number);
      const choices = [...same, ...parts];
      if (choices.length < 2) continue;
      const found = { node, choices, layer };
      first ??= found;
      if (inCycle.has(node)) {
        cyclic = found;
        break;
      }
    }
    arriving = next;
  }
  const split = cyclic ?? first;
  const targetPointer = (nodes[target] as SchemaNode).pointer;
  const where = describePath(labels);
  if (split === undefined) {
    return new SchemaRefusedError(
      targetPointer,
      `a part of the value (${JSON.stringify(where)}) would be checked against this subschema ${count >= SATURATED ? `more than ${MAX_SCHEMA_REPEATS}` : count} times`,
      LIMITS.repeats,
    );
  }
  const base = (nodes[split.node] as SchemaNode).pointer;
  const relative = (edge: Edge): string => JSON.stringify(edge.via.slice(base.length + 1));
  const [one, other] = split.choices as [Edge, Edge];
  // Name the reference a branch makes, where it makes one: that is what closes the cycle.
  const branchReference = (nodes[one.target] as SchemaNode).same.find((edge) => edge.via.endsWith('/$ref'));
  const at = one.via.endsWith('/$ref') || branchReference === undefined ? one.via : branchReference.via;
  const keywords = [...new Set(split.choices.map((edge) => edge.via.slice(base.length + 1).split('/')[0] as string))]
    .map((keyword) => `"${keyword}"`)
    .join(' and ');
  const value = where === '' ? 'one value' : `a value ${labels.length} level${labels.length === 1 ? '' : 's'} deep (${JSON.stringify(where)})`;
  const times = count >= SATURATED ? `more than ${MAX_SCHEMA_REPEATS}` : String(count);
  const reason =
    split === cyclic
      ? `"$ref" cycle through ${keywords}: ${relative(one)} and ${relative(other)} both lead on to ${JSON.stringify(targetPointer)}, so ${value} is checked against it ${times} times, more with every level deeper`
      : `${relative(one)} and ${relative(other)} of ${JSON.stringify(base)} both lead to ${JSON.stringify(targetPointer)}, so ${value} is checked against it ${times} times`;
  return new SchemaRefusedError(at, reason, LIMITS.repeats);
}

/** The reachable nodes on a cycle of the automaton (Tarjan's strongly connected components, iterative). */
function cyclicNodes(nodes: readonly SchemaNode[], reachable: readonly number[]): Set<number> {
  const index = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const cyclic = new Set<number>();
  let counter = 0;
  for (const start of reachable) {
    if (index.has(start)) continue;
    const frames: { node: number; edges: Edge[]; next: number }[] = [];
    const open = (node: number): void => {
      index.set(node, counter);
      low.set(node, counter);
      counter += 1;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, edges: edgesOf(nodes[node] as SchemaNode), next: 0 });
    };
    open(start);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1] as { node: number; edges: Edge[]; next: number };
      const edge = frame.edges[frame.next];
      if (edge !== undefined) {
        frame.next += 1;
        if (edge.target === frame.node) cyclic.add(frame.node);
        if (!index.has(edge.target)) open(edge.target);
        else if (onStack.has(edge.target)) low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(edge.target) as number));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: number[] = [];
        for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
          onStack.delete(node);
          component.push(node);
          if (node === frame.node) break;
        }
        if (component.length > 1) for (const node of component) cyclic.add(node);
      }
    }
  }
  return cyclic;
}
