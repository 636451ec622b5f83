import { type Capability, describeCapability, isGranted } from '../capabilities/index.ts';
import { CapabilityDeniedError } from '../errors/index.ts';

/**
 * The capabilities each live agent holds. Deny by default: an agent it does not know holds
 * nothing. Every door (CLI, HTTP, MCP, A2A, triggers, tools) asks here.
 */
export class CapabilityManager {
  readonly #grants = new Map<string, readonly Capability[]>();

  grant(agentId: string, capabilities: readonly Capability[]): void {
    this.#grants.set(agentId, capabilities);
  }

  revoke(agentId: string): void {
    this.#grants.delete(agentId);
  }

  granted(agentId: string): readonly Capability[] {
    return this.#grants.get(agentId) ?? [];
  }

  /** Whether the agent holds a capability covering `required`. */
  check(agentId: string, required: Capability): boolean {
    return isGranted(this.granted(agentId), required);
  }

  /**
   * @throws {CapabilityDeniedError} naming the capability and the agent, when not granted.
   */
  require(agentId: string, agentName: string, required: Capability): void {
    if (!this.check(agentId, required)) {
      throw new CapabilityDeniedError(`agent "${agentName}" is not granted ${describeCapability(required)}`, {
        details: { agentId, capability: { ...required } },
      });
    }
  }
}
