import { isGranted } from '../capabilities/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { modelEndpoint, modelName } from '../models/index.ts';
import type { ConfinedParent, ConfinementContext } from './confinement-context.ts';
import type { Report } from './confinement-rules.ts';
import { manifestModels } from './model-targets.ts';

/** Part of `confineChild`: the models a child may call, and where it may send their keys. */

/** `host:port` of a URL, as `net_connect` grants name it; undefined when it does not parse. */
function hostPortOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    const port = parsed.port === '' ? (parsed.protocol === 'https:' ? '443' : '80') : parsed.port;
    return `${parsed.hostname}:${port}`;
  } catch {
    return undefined;
  }
}

/**
 * Each model the child may call must be one the parent may call (its `llm_query` grants, or
 * without any its own models), and its key may go only where the parent sends that key, unless
 * the parent could read the key (`env_read`) and reach the host (`network`) itself. A URL that
 * carries no key must be one the parent calls or may reach.
 */
export function checkModels(parent: ConfinedParent, child: Manifest, context: ConfinementContext, report: Report): void {
  const parentModels = manifestModels(parent.manifest, context).map((model) => ({ name: modelName(model.target), ...modelEndpoint(model.target) }));
  const caps = parent.capabilities;
  const queries = caps.some((capability) => capability.kind === 'llm_query');
  const networkAllowed = parent.manifest.exec_policy?.allow_network !== false;
  const mayReach = (url: string): boolean => {
    const target = hostPortOf(url);
    return networkAllowed && target !== undefined && isGranted(caps, { kind: 'net_connect', pattern: target });
  };
  for (const { field, target } of manifestModels(child, context)) {
    const name = modelName(target);
    const { keyVariable, baseUrl } = modelEndpoint(target);
    const mayQuery = queries ? isGranted(caps, { kind: 'llm_query', pattern: name }) : parentModels.some((model) => model.name === name);
    if (!mayQuery) {
      report(
        field,
        `calls model "${name}", which the parent may not call (${queries ? 'its [capabilities].llm_query does not match it' : `it calls only ${parentModels.map((model) => `"${model.name}"`).join(', ') || 'no model'}`})`,
      );
      continue;
    }
    const sameRoute = parentModels.some((model) => model.keyVariable === keyVariable && model.baseUrl === baseUrl);
    if (sameRoute) continue;
    const keyAllowed = keyVariable === null || isGranted(caps, { kind: 'env_read', pattern: keyVariable });
    const urlAllowed = parentModels.some((model) => model.baseUrl === baseUrl) || mayReach(baseUrl);
    if (keyAllowed && urlAllowed) continue;
    report(
      field,
      keyVariable !== null && !keyAllowed
        ? `would send ${keyVariable} to ${JSON.stringify(baseUrl)}, where the parent does not send it (the parent needs [capabilities].env_read "${keyVariable}" and network for that host, or use the parent's model settings)`
        : `would call ${JSON.stringify(baseUrl)}, which the parent neither calls nor may reach through [capabilities].network`,
    );
  }
}
