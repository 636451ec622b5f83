import { z } from 'zod';
import type { Tool, ToolResult } from '../../contracts/index.ts';
import { netConnectFor, parseWebUrl } from './net-guard.ts';
import { htmlToReadableText } from './web-html-text.ts';
import { bodyText, isTextual, looksLikeText, mediaType, readWebSettings, sendWebRequest, webToolFailure, type WebResponse } from './web-request.ts';

const WebFetchInput = z.strictObject({
  url: z.string().min(1).describe('The http or https URL to fetch.'),
});

/**
 * `web_fetch {url}`: GETs a page through the SSRF guard and returns it readable. The text
 * begins with the final URL and status; HTML becomes its title and main text, JSON and text
 * come back as they are, anything else as a one-line description. Settings
 * (`[tools.web_fetch]`): `max_content_bytes` (default 1,000,000), `timeout_seconds` (default
 * 30). A refused address, a redirect to an ungranted host, too many redirects, a timeout and an
 * HTTP status of 400 or more are error results.
 */
export const webFetchTool: Tool<z.output<typeof WebFetchInput>> = {
  name: 'web_fetch',
  // Run again on a resumed turn (decision 0045): it only GETs.
  idempotent: true,
  description:
    'Fetch a web page or document by URL (GET) and return it as readable text: HTML is reduced to its title and main text, JSON and plain text are returned as they are.',
  inputSchema: WebFetchInput,
  requires: (input) => [netConnectFor(parseWebUrl(input.url))],
  async execute(input, context) {
    try {
      const settings = readWebSettings('web_fetch', context.settings);
      const response = await sendWebRequest(
        {
          url: parseWebUrl(input.url),
          method: 'GET',
          headers: {
            accept: 'text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5',
            'accept-encoding': 'gzip, deflate, br',
            'user-agent': 'Loom-web_fetch/0.1',
          },
        },
        { agent: context.agent, signal: context.signal, settings },
      );
      return fetchResult(response, settings.maxContentBytes);
    } catch (error) {
      return webToolFailure(error, context);
    }
  },
};

function fetchResult(response: WebResponse, maxBytes: number): ToolResult {
  const type = mediaType(response.headers);
  const lines = [`URL: ${response.url.href}`, `Status: ${response.status} ${response.statusText}`.trimEnd()];
  if (response.redirects.length > 0) {
    lines.push(`Redirected from: ${response.redirects[0]?.href ?? ''}`);
  }
  if (response.truncated) {
    lines.push(`Note: the content was cut at ${maxBytes} bytes (max_content_bytes).`);
  }
  let title = '';
  if (type === 'text/html' || type === 'application/xhtml+xml') {
    const readable = htmlToReadableText(bodyText(response), response.url.href);
    title = readable.title;
    if (title !== '') {
      lines.push(`Title: ${title}`);
    }
    lines.push('', readable.text);
  } else if (isTextual(type) || (type === '' && looksLikeText(response.body))) {
    lines.push('', bodyText(response));
  } else {
    lines.push('', `[${type} content, ${response.body.length}${response.truncated ? '+' : ''} bytes, not shown]`);
  }
  return {
    text: lines.join('\n'),
    structured: {
      url: response.url.href,
      status: response.status,
      contentType: type,
      title,
      truncated: response.truncated,
      redirects: response.redirects.map((url) => url.href),
    },
    ...(response.status >= 400 ? { isError: true } : {}),
  };
}
