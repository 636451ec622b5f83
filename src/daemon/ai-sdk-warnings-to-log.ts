import type { Logger } from '../contracts/index.ts';

/** A warning as the AI SDK reports it (its `Warning` union, read loosely: newer kinds are logged as they come). */
interface SdkWarning {
  type?: unknown;
  feature?: unknown;
  setting?: unknown;
  details?: unknown;
  message?: unknown;
}

/** What the AI SDK hands the function it finds in `globalThis.AI_SDK_LOG_WARNINGS`. */
interface SdkWarnings {
  warnings: readonly SdkWarning[];
  provider?: string | undefined;
  model?: string | undefined;
}

/** One warning as a sentence: `topK is not supported (details)`, or its message. */
function describeWarning(warning: SdkWarning): string {
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const details = text(warning.details);
  if (warning.type === 'unsupported') return `${text(warning.feature) ?? 'a feature'} is not supported${details === undefined ? '' : ` (${details})`}`;
  if (warning.type === 'compatibility')
    return `${text(warning.feature) ?? 'a feature'} runs in a compatibility mode${details === undefined ? '' : ` (${details})`}`;
  if (warning.type === 'deprecated')
    return `${text(warning.setting) ?? 'a setting'} is deprecated${text(warning.message) === undefined ? '' : `: ${text(warning.message) ?? ''}`}`;
  return text(warning.message) ?? JSON.stringify(warning);
}

/**
 * Sends the AI SDK's warnings (a setting a provider ignores, a deprecated option) to `logger` at
 * warn, one line each with the provider and model, instead of the raw `(node:PID) Warning: AI SDK
 * Warning …` lines the SDK writes to standard error by default. The SDK reads one process-wide
 * hook (`globalThis.AI_SDK_LOG_WARNINGS`, its documented way): the last caller wins. Returns a
 * function that puts back what was there.
 * @example const restore = logAiSdkWarnings(logger); // … restore() when the daemon stops
 */
export function logAiSdkWarnings(logger: Logger): () => void {
  const holder = globalThis as { AI_SDK_LOG_WARNINGS?: unknown };
  const before = holder.AI_SDK_LOG_WARNINGS;
  holder.AI_SDK_LOG_WARNINGS = (options: SdkWarnings): void => {
    const model = options.provider === undefined ? options.model : `${options.provider}${options.model === undefined ? '' : `/${options.model}`}`;
    for (const warning of options.warnings) {
      logger.warn(
        { component: 'ai-sdk', warningType: warning.type, ...(model === undefined ? {} : { model }) },
        `model library warning${model === undefined ? '' : ` (${model})`}: ${describeWarning(warning)}`,
      );
    }
  };
  return () => {
    holder.AI_SDK_LOG_WARNINGS = before;
  };
}
