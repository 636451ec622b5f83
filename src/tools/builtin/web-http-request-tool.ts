import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';
import { netConnectFor, parseWebUrl } from './net-guard.ts';
import { bodyText, isTextual, looksLikeText, mediaType, readWebSettings, sendWebRequest, webToolFailure } from './web-request.ts';

const HttpRequestInput = z.strictObject({
  url: z.string().min(1).describe('The http or https URL.'),
  method: z
    .string()
    .regex(/^[A-Za-z]+$/, 'an HTTP method such as GET, POST, PUT, PATCH or DELETE')
    .default('GET')
    .describe('The HTTP method; GET when omitted.'),
  headers: z.record(z.string(), z.string()).default({}).describe('Request headers.'),
  body: z.string().optional().describe('The request body, as text.'),
  redirect: z
    .enum(['follow', 'manual'])
    // Optional, not defaulted: callers that build the input themselves need not name it.
    .optional()
    .describe('"follow" (the default) follows up to 5 redirects; "manual" returns a redirect response as it is, with its location header.'),
});

/** Response headers worth showing a model; the rest are noise. */
const SHOWN_HEADERS = [
  'content-type',
  'content-length',
  'location',
  'etag',
  'last-modified',
  'cache-control',
  'retry-after',
  'www-authenticate',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/** The methods that only read, run again when their turn resumes. */
const READING_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * `http_request {url, method, headers, body, redirect}`: any HTTP method through the same SSRF
 * guard and redirect rules as web_fetch. Returns the status, selected headers and the body as
 * text, cut at `max_content_bytes`; an HTTP error status is data here, not an error result. With
 * `redirect: "manual"` a redirect is returned as it is, not followed. Settings
 * (`[tools.http_request]`): `max_content_bytes` (default 1,000,000), `timeout_seconds`
 * (default 30).
 */
export const httpRequestTool: Tool<z.output<typeof HttpRequestInput>> = {
  name: 'http_request',
  description:
    'Send an HTTP request (any method, with headers and a text body) and return the status, the main response headers and the body as text. Use for APIs.',
  inputSchema: HttpRequestInput,
  requires: (input) => [netConnectFor(parseWebUrl(input.url))],
  // Run again on a resumed turn only when it reads (decision 0045): GET, HEAD and OPTIONS.
  idempotent: (input) => READING_METHODS.has(input.method.toUpperCase()),
  async execute(input, context) {
    try {
      const settings = readWebSettings('http_request', context.settings);
      const response = await sendWebRequest(
        { url: parseWebUrl(input.url), method: input.method.toUpperCase(), headers: input.headers, body: input.body },
        { agent: context.agent, signal: context.signal, settings, redirect: input.redirect },
      );
      const type = mediaType(response.headers);
      const headers: Record<string, string> = {};
      for (const name of SHOWN_HEADERS) {
        const value = response.headers[name];
        if (value !== undefined) {
          headers[name] = Array.isArray(value) ? value.join(', ') : value;
        }
      }
      const isText = isTextual(type) || (type === '' && looksLikeText(response.body));
      const body = isText ? bodyText(response) : `[${type} content, ${response.body.length}${response.truncated ? '+' : ''} bytes, not shown]`;
      const lines = [
        `HTTP ${response.status} ${response.statusText}`.trimEnd(),
        `URL: ${response.url.href}`,
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      if (response.truncated) {
        lines.push(`Note: the body was cut at ${settings.maxContentBytes} bytes (max_content_bytes).`);
      }
      lines.push('', body);
      return {
        text: lines.join('\n'),
        structured: { url: response.url.href, status: response.status, headers, body, truncated: response.truncated },
      };
    } catch (error) {
      return webToolFailure(error, context);
    }
  },
};
