import type { AgentCard } from '@a2a-js/sdk';
import { z } from 'zod';
import type { Logger, Tool } from '../contracts/index.ts';
import type { A2aClientOptions } from './a2a-client.ts';

// The A2A client (and the SDK under it) is imported when an external agent is first reached,
// not when the daemon starts: a daemon that never calls out keeps it out of memory.
const loadClient = () => import('./a2a-client.ts');

/** An external agent of `[[a2a.external_agents]]`, as `GET /api/a2a/external` and `loom a2a list` show it. */
export interface ExternalAgentView {
  name: string;
  url: string;
  status: 'pending' | 'discovered' | 'failed';
  description: string | null;
  skills: string[];
  streaming: boolean;
  error: string | null;
  discovered_at: string | null;
}

/** The external agents and their cards, discovered at daemon start. */
export class ExternalAgentRegistry {
  readonly #agents = new Map<string, { view: ExternalAgentView; card: AgentCard | undefined }>();

  /** Replaces the configured agents (all pending). */
  configure(agents: readonly { name: string; url: string }[]): void {
    this.#agents.clear();
    for (const agent of agents)
      this.#agents.set(agent.name, {
        view: { name: agent.name, url: agent.url, status: 'pending', description: null, skills: [], streaming: false, error: null, discovered_at: null },
        card: undefined,
      });
  }

  /**
   * Fetches every configured agent's card (in parallel, 30 s each). Never throws: failures are
   * logged and shown as `failed`. Do not await it on the start path.
   */
  async discoverAll(logger: Logger, options: A2aClientOptions = {}): Promise<void> {
    await Promise.all(
      [...this.#agents.values()].map(async (entry) => {
        try {
          const { discoverAgent } = await loadClient();
          const card = await discoverAgent(entry.view.url, options);
          entry.card = card;
          entry.view = {
            ...entry.view,
            status: 'discovered',
            description: card.description,
            skills: card.skills.map((skill) => skill.id),
            streaming: card.capabilities?.streaming === true,
            error: null,
            discovered_at: new Date().toISOString(),
          };
          logger.info({ agent: entry.view.name, url: entry.view.url, skills: card.skills.length }, 'discovered an external A2A agent');
        } catch (error) {
          entry.view = { ...entry.view, status: 'failed', error: error instanceof Error ? error.message : String(error) };
          logger.warn({ agent: entry.view.name, url: entry.view.url, err: error }, 'could not discover an external A2A agent');
        }
      }),
    );
  }

  list(): ExternalAgentView[] {
    return [...this.#agents.values()].map((entry) => ({ ...entry.view }));
  }

  /** The agent's card, discovering it now if it was not (or failed). Undefined for an unknown name. */
  async card(name: string, options: A2aClientOptions = {}): Promise<AgentCard | undefined> {
    const entry = this.#agents.get(name);
    if (entry === undefined) return undefined;
    if (entry.card === undefined) {
      const { discoverAgent } = await loadClient();
      entry.card = await discoverAgent(entry.view.url, options);
    }
    return entry.card;
  }
}

/** The registry the daemon fills at start and `a2a_send` reads. */
export const externalAgents = new ExternalAgentRegistry();

/** What `GET /api/a2a/external` answers: `{ agents, total }`. */
export function listExternalAgents(registry: ExternalAgentRegistry = externalAgents): { agents: ExternalAgentView[]; total: number } {
  const agents = registry.list();
  return { agents, total: agents.length };
}

/** Configures the registry from `[a2a]` and starts discovery in the background (never blocks, never throws). */
export function startExternalDiscovery(
  config: { a2a: { enabled: boolean; external_agents: readonly { name: string; url: string }[] } },
  logger: Logger,
  registry: ExternalAgentRegistry = externalAgents,
): Promise<void> {
  registry.configure(config.a2a.enabled ? config.a2a.external_agents : []);
  return registry.discoverAll(logger.child({ component: 'a2a' })).catch(() => undefined);
}

const A2aSendInput = z.strictObject({
  agent: z.string().min(1).describe('The name of the external agent ([[a2a.external_agents]])'),
  message: z.string().min(1).describe('The task for it'),
});

/** Builds `a2a_send` on a registry. */
export function createA2aSendTool(registry: ExternalAgentRegistry): Tool<z.output<typeof A2aSendInput>> {
  return {
    name: 'a2a_send',
    description: 'Send a task to an external A2A agent by name and wait for its reply.',
    inputSchema: A2aSendInput,
    requires: (input) => [{ kind: 'agent_message', pattern: input.agent }],
    async execute(input, context) {
      const card = await registry.card(input.agent, { signal: context.signal });
      if (card === undefined) {
        const known = registry.list().map((agent) => agent.name);
        return { text: `no external A2A agent named "${input.agent}"; configured: ${known.length === 0 ? 'none' : known.join(', ')}`, isError: true };
      }
      const { sendA2aMessage } = await loadClient();
      const result = await sendA2aMessage(card, input.message, { signal: context.signal });
      const failed = result.state === 'failed' || result.state === 'rejected' || result.state === 'canceled';
      return {
        text: result.text !== '' ? result.text : `(the task ended ${result.state} without text)`,
        structured: { agent: input.agent, task_id: result.taskId, state: result.state },
        ...(failed ? { isError: true } : {}),
      };
    },
  };
}

/** `a2a_send {agent, message}` on the daemon's registry: needs `agent_message` for the agent's name. */
export const a2aSendTool = createA2aSendTool(externalAgents);
