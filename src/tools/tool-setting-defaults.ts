import { DEFAULT_MAX_CONTENT_BYTES } from './builtin/web-request.ts';
import { DEFAULT_MAX_RESULTS } from './builtin/web-search-tool.ts';

/**
 * What the built-in tools do with a numeric `[tools.<name>]` setting left out, by key: the bound
 * a child's value is held to when its parent leaves the key out (a child may only narrow tool
 * settings). `timeout_seconds` is the tool runner's own (`DEFAULT_TOOL_TIMEOUT_MS`).
 */
export const NUMERIC_TOOL_SETTING_DEFAULTS: Readonly<Record<string, number>> = {
  max_content_bytes: DEFAULT_MAX_CONTENT_BYTES,
  max_results: DEFAULT_MAX_RESULTS,
};
