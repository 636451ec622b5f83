import { access, constants, readFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { isGranted } from '../capabilities/index.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { CodeModuleError, ManifestError } from '../errors/index.ts';
import { capabilitiesFromManifest, codeModuleOf, codeSettingsOf, type Manifest } from '../manifest/index.ts';
import type { CodeModuleRunner } from './code-module-runner.ts';
import type { HostCallPort } from './host-calls.ts';
import type { CodeAgentRequest } from './protocol.ts';
import { createPythonAgent } from './python/python-agent.ts';
import { prepareWasmModule } from './wasm/wasm-abi.ts';
import { createWasmAgent } from './wasm/wasm-agent.ts';
import { createWasmPool } from './wasm/wasm-pool.ts';

/** An agent as its code module needs to know it. */
export interface CodeAgent {
  id: string;
  name: string;
  manifest: Manifest;
}

/** What code modules are built with: the daemon's clock, log and environment, and where workspaces are. */
export interface CodeModulesOptions {
  clock: Clock;
  logger: Logger;
  /** The daemon's environment: PATH for interpreters, and what `env_read` grants pass on. */
  env: Readonly<Record<string, string | undefined>>;
  workspaceOf(agent: { name: string; workspace: string | undefined }): string;
}

/**
 * The code agents' modules of one daemon, kept warm: wasm modules compiled once per agent and run
 * on a pool of threads all agents share, a Python process per agent, stopped with its agent. Also a lifecycle hook: `stop` ends an agent's module
 * when it is suspended, killed, updated or the daemon stops.
 */
export interface CodeModules {
  readonly name: string;
  /**
   * Checks a code agent's module before it is spawned or updated: its path absolute, the file
   * there, a wasm module valid and following an ABI, a Python script readable.
   * @throws {ManifestError} naming what is wrong or missing.
   */
  check(manifest: Manifest): Promise<void>;
  /** Answers one message with the agent's module. @throws {CodeModuleError} */
  turn(agent: CodeAgent, request: CodeAgentRequest, port: HostCallPort, signal: AbortSignal): Promise<string>;
  start(agent: CodeAgent): void;
  stop(agent: CodeAgent): Promise<void>;
  /** Stops every module. */
  close(): Promise<void>;
}

/** The environment variables of `env` an agent's `env_read` grants, and PATH. */
function moduleEnv(manifest: Manifest, env: CodeModulesOptions['env']): Record<string, string> {
  const granted = capabilitiesFromManifest(manifest.capabilities);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && isGranted(granted, { kind: 'env_read', pattern: key })) out[key] = value;
  }
  return out;
}

export function createCodeModules(options: CodeModulesOptions): CodeModules {
  const { clock, logger } = options;
  const runners = new Map<string, { module: string; runner: CodeModuleRunner }>();
  const pool = createWasmPool({ clock });

  function runnerOf(agent: CodeAgent): CodeModuleRunner {
    const existing = runners.get(agent.id);
    if (existing !== undefined && existing.module === agent.manifest.module) return existing.runner;
    const ref = codeModuleOf(agent.manifest);
    if (ref === undefined) throw new CodeModuleError('load', `agent "${agent.name}" runs no code module`);
    const settings = codeSettingsOf(agent.manifest);
    const common = {
      path: ref.path,
      name: agent.name,
      limits: { timeoutMs: settings.timeout_ms, memoryMb: settings.memory_mb, maxReplyBytes: settings.max_reply_bytes },
      workspace: options.workspaceOf({ name: agent.name, workspace: agent.manifest.workspace }),
      clock,
      logger: logger.child({ agentId: agent.id, agent: agent.name, module: agent.manifest.module }),
    };
    const granted = moduleEnv(agent.manifest, options.env);
    const runner =
      ref.kind === 'wasm'
        ? createWasmAgent({ ...common, env: granted, pool })
        : createPythonAgent({
            ...common,
            interpreter: settings.interpreter,
            env: { ...granted, PATH: options.env['PATH'] ?? '/usr/bin:/bin' },
          });
    runners.set(agent.id, { module: agent.manifest.module, runner });
    return runner;
  }

  async function stop(agentId: string): Promise<void> {
    const entry = runners.get(agentId);
    runners.delete(agentId);
    await entry?.runner.close();
  }

  return {
    name: 'code-modules',

    async check(manifest) {
      const ref = codeModuleOf(manifest);
      if (ref === undefined) return;
      const where = `module ${JSON.stringify(manifest.module)}`;
      const refuse = (problem: string): never => {
        throw new ManifestError(`cannot run agent "${manifest.name}": ${where} ${problem}`, { details: { field: 'module', module: manifest.module } });
      };
      if (!isAbsolute(ref.path))
        refuse(
          'is a relative path, and a manifest sent as text has no folder to resolve it against; spawn it from its file (`loom agent spawn path/to/agent.toml`) or give an absolute path',
        );
      let bytes: Buffer;
      try {
        if (ref.kind === 'python') {
          await access(ref.path, constants.R_OK);
          return;
        }
        bytes = await readFile(ref.path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const missing = `names no file: there is nothing at that path${ref.kind === 'wasm' ? ' (a module built from source is there only once built: see the build command in its manifest or docs/code-agents.md)' : ''}`;
        return refuse(code === 'ENOENT' ? missing : code === 'EISDIR' ? 'names a folder, not a file' : `cannot be read: ${(error as Error).message}`);
      }
      try {
        await prepareWasmModule(bytes, codeSettingsOf(manifest).memory_mb);
      } catch (error) {
        refuse((error as Error).message);
      }
    },

    turn: (agent, request, port, signal) => runnerOf(agent).turn(JSON.stringify(request), port, signal),

    start: () => undefined,
    stop: (agent) => stop(agent.id),

    async close() {
      await Promise.all([...runners.keys()].map((id) => stop(id)));
      await pool.close();
    },
  };
}
