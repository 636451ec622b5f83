/** The built-in tools. Each declares what a call needs; the tool runner decides. */
import type { Tool } from '../contracts/index.ts';
import { agentKillTool } from './builtin/agent-kill-tool.ts';
import { agentListTool } from './builtin/agent-list-tool.ts';
import { agentMessageTool } from './builtin/agent-message-tool.ts';
import { agentSpawnTool } from './builtin/agent-spawn-tool.ts';
import { fileListTool } from './builtin/file-list.ts';
import { fileReadTool } from './builtin/file-read.ts';
import { fileWriteTool } from './builtin/file-write.ts';
import { generateTextTool } from './builtin/generate-text-tool.ts';
import { LOG_TOOLS } from './builtin/log-tools.ts';
import { memoryRecallTool } from './builtin/memory-recall-tool.ts';
import { memoryStoreTool } from './builtin/memory-store-tool.ts';
import { shellExecTool } from './builtin/shell-exec.ts';
import { webFetchTool } from './builtin/web-fetch-tool.ts';
import { httpRequestTool } from './builtin/web-http-request-tool.ts';
import { webSearchTool } from './builtin/web-search-tool.ts';

export { agentMessageTool };
export { NUMERIC_TOOL_SETTING_DEFAULTS } from './tool-setting-defaults.ts';
// The redirect rules of the web tools, for a caller that follows redirects itself (a forged tool's `fetch`).
export { MAX_REDIRECTS, REDIRECT_STATUSES, redirectedRequest, type WebRequest } from './builtin/web-request.ts';
export { LOG_TOOLS } from './builtin/log-tools.ts';
// The web tools' address guard, for the other clients that reach a URL an outsider names (A2A push, MCP servers).
export { requestPinned, vetHostAddresses, type HostResolver, type VettedAddress } from './builtin/net-guard.ts';
// How MCP servers' tools are named (spec/05), here so that packages and capabilities can name
// them without loading the MCP SDK.
export { extractMcpServer, formatMcpToolName, isMcpTool, MCP_TOOL_PREFIX, normalizeMcpName, parseMcpToolName } from './mcp-tool-name.ts';

/** Every built-in tool, in the order they are listed to models. */
export const BUILTIN_TOOLS: readonly Tool<never>[] = [
  fileReadTool,
  fileWriteTool,
  fileListTool,
  shellExecTool,
  webFetchTool,
  httpRequestTool,
  webSearchTool,
  generateTextTool,
  memoryStoreTool,
  memoryRecallTool,
  agentSpawnTool,
  agentMessageTool,
  agentKillTool,
  agentListTool,
  ...LOG_TOOLS,
] as unknown as readonly Tool<never>[];
