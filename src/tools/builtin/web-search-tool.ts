import { z } from 'zod';
import type { JsonValue, Tool, ToolContext, ToolResult } from '../../contracts/index.ts';
import { ConfigError } from '../../errors/index.ts';
import { netConnectFor, parseWebUrl } from './net-guard.ts';
import { bodyText, readWebSettings, sendWebRequest, webToolFailure, type WebRequest, type WebResponse } from './web-request.ts';
import { WebRequestError } from './web-request-error.ts';

// `q` is the name many search APIs (and spec/02's compose example) use; either is accepted.
const WebSearchInput = z
  .strictObject({
    query: z.string().min(1).optional().describe('What to search the web for.'),
    q: z.string().min(1).optional().describe('The same as query, for callers that name it q.'),
  })
  .refine((input) => input.query !== undefined || input.q !== undefined, { error: 'expected query: what to search the web for' })
  .transform((input) => ({ query: input.query ?? input.q ?? '' }));

/** The search providers web_search speaks to. */
export type WebSearchProvider = 'tavily' | 'brave' | 'searxng';

/** Results returned when `[tools.web_search] max_results` is not set. */
export const DEFAULT_MAX_RESULTS = 5;

const DEFAULT_BASE_URLS: Readonly<Record<WebSearchProvider, string | undefined>> = {
  tavily: 'https://api.tavily.com',
  brave: 'https://api.search.brave.com',
  searxng: undefined,
};

const SearchSettingsSchema = z.looseObject({
  provider: z.enum(['tavily', 'brave', 'searxng']).optional(),
  base_url: z.string().optional(),
  max_results: z.int().positive().max(50).optional(),
});

/** One search result. */
interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

/** A provider chosen and ready to ask. */
interface ProviderPlan {
  provider: WebSearchProvider;
  baseUrl: URL;
  apiKey: string | undefined;
  maxResults: number;
}

// Peers' responses parse loosely: only the fields used are required.
const TavilyResponse = z.looseObject({
  results: z.array(z.looseObject({ title: z.string().default(''), url: z.string(), content: z.string().default('') })),
});
const BraveResponse = z.looseObject({
  web: z
    .looseObject({
      results: z.array(z.looseObject({ title: z.string().default(''), url: z.string(), description: z.string().default('') })).default([]),
    })
    .optional(),
});
const SearxngResponse = z.looseObject({
  results: z.array(z.looseObject({ title: z.string().default(''), url: z.string(), content: z.string().default('') })),
});

/**
 * `web_search {query}`: searches the web with Tavily (`TAVILY_API_KEY`), Brave
 * (`BRAVE_API_KEY`) or a SearXNG instance (`[tools.web_search] base_url`), and returns a
 * numbered list of title, URL and snippet. `[tools.web_search]` settings: `provider` (else the
 * first of those whose key or base_url is present), `base_url` (overrides the provider's API
 * address), `max_results` (default 5), `max_content_bytes`, `timeout_seconds`. With no provider
 * configured, or a provider answering with an error, the result is an error naming what to set.
 */
export const webSearchTool: Tool<z.output<typeof WebSearchInput>> = {
  name: 'web_search',
  // Run again on a resumed turn (decision 0045): it only searches.
  idempotent: true,
  description: 'Search the web and return a numbered list of results (title, URL, snippet). Use web_fetch to read a result.',
  inputSchema: WebSearchInput,
  requires(_input, context) {
    const plan = planSearch(context);
    return typeof plan === 'string' ? [] : [netConnectFor(plan.baseUrl)];
  },
  async execute(input, context) {
    try {
      const plan = planSearch(context);
      if (typeof plan === 'string') {
        return { text: plan, isError: true };
      }
      const response = await sendWebRequest(searchRequest(plan, input.query), {
        agent: context.agent,
        signal: context.signal,
        settings: readWebSettings('web_search', context.settings),
      });
      if (response.status >= 400) {
        throw new WebRequestError(`web_search failed: ${plan.provider} answered HTTP ${response.status}: ${bodyText(response).slice(0, 300)}`, {
          details: { provider: plan.provider, status: response.status },
          isRetryable: response.status === 429 || response.status >= 500,
        });
      }
      return searchResult(plan, input.query, parseHits(plan.provider, response).slice(0, plan.maxResults));
    } catch (error) {
      return webToolFailure(error, context);
    }
  },
};

/** The provider to use, or the message explaining that none is configured. Throws a ConfigError for bad settings. */
function planSearch(context: ToolContext): ProviderPlan | string {
  const parsed = SearchSettingsSchema.safeParse(context.settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`cannot read [tools.web_search]: ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? 'invalid'}`);
  }
  const settings = parsed.data;
  const keys: Record<WebSearchProvider, string | undefined> = {
    tavily: nonEmpty(context.env['TAVILY_API_KEY']),
    brave: nonEmpty(context.env['BRAVE_API_KEY']),
    searxng: undefined,
  };
  const provider =
    settings.provider ?? (keys.tavily !== undefined ? 'tavily' : keys.brave !== undefined ? 'brave' : settings.base_url !== undefined ? 'searxng' : undefined);
  if (provider === undefined) {
    return 'web_search is not configured: set TAVILY_API_KEY or BRAVE_API_KEY in the daemon environment, or [tools.web_search] base_url to a SearXNG instance (and optionally provider = "tavily" | "brave" | "searxng")';
  }
  if (provider !== 'searxng' && keys[provider] === undefined) {
    const variable = provider === 'tavily' ? 'TAVILY_API_KEY' : 'BRAVE_API_KEY';
    return `web_search is not configured: [tools.web_search] provider is "${provider}" but ${variable} is not set in the daemon environment`;
  }
  const base = settings.base_url ?? DEFAULT_BASE_URLS[provider];
  if (base === undefined) {
    return 'web_search is not configured: provider "searxng" needs [tools.web_search] base_url, the address of a SearXNG instance';
  }
  return { provider, baseUrl: parseWebUrl(base), apiKey: keys[provider], maxResults: settings.max_results ?? DEFAULT_MAX_RESULTS };
}

function searchRequest(plan: ProviderPlan, query: string): WebRequest {
  switch (plan.provider) {
    case 'tavily':
      return {
        url: endpoint(plan.baseUrl, 'search'),
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${plan.apiKey ?? ''}` },
        body: JSON.stringify({ query, max_results: plan.maxResults, search_depth: 'basic' }),
      };
    case 'brave': {
      const url = endpoint(plan.baseUrl, 'res/v1/web/search');
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(plan.maxResults));
      return { url, method: 'GET', headers: { accept: 'application/json', 'x-subscription-token': plan.apiKey ?? '' } };
    }
    case 'searxng': {
      const url = endpoint(plan.baseUrl, 'search');
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      return { url, method: 'GET', headers: { accept: 'application/json' } };
    }
  }
}

function parseHits(provider: WebSearchProvider, response: WebResponse): SearchHit[] {
  let json: JsonValue;
  try {
    json = JSON.parse(bodyText(response)) as JsonValue;
  } catch (error) {
    throw new WebRequestError(`web_search failed: ${provider} answered with a body that is not JSON`, { cause: error });
  }
  const invalid = (error: z.ZodError): WebRequestError =>
    new WebRequestError(`web_search failed: unexpected ${provider} response: ${error.issues[0]?.path.join('.') ?? ''} ${error.issues[0]?.message ?? ''}`);
  switch (provider) {
    case 'tavily': {
      const parsed = TavilyResponse.safeParse(json);
      if (!parsed.success) throw invalid(parsed.error);
      return parsed.data.results.map((hit) => ({ title: hit.title, url: hit.url, snippet: hit.content }));
    }
    case 'brave': {
      const parsed = BraveResponse.safeParse(json);
      if (!parsed.success) throw invalid(parsed.error);
      return (parsed.data.web?.results ?? []).map((hit) => ({ title: stripTags(hit.title), url: hit.url, snippet: stripTags(hit.description) }));
    }
    case 'searxng': {
      const parsed = SearxngResponse.safeParse(json);
      if (!parsed.success) throw invalid(parsed.error);
      return parsed.data.results.map((hit) => ({ title: hit.title, url: hit.url, snippet: hit.content }));
    }
  }
}

function searchResult(plan: ProviderPlan, query: string, hits: SearchHit[]): ToolResult {
  const text =
    hits.length === 0
      ? `no results for "${query}"`
      : hits.map((hit, index) => `${index + 1}. ${hit.title.trim() || hit.url}\n   ${hit.url}\n   ${collapse(hit.snippet)}`.trimEnd()).join('\n\n');
  return {
    text,
    structured: { provider: plan.provider, query, results: hits.map((hit) => ({ title: hit.title, url: hit.url, snippet: hit.snippet })) },
  };
}

/** `path` under `base`, keeping any path the base already has (`https://searx.example/sx/` + `search`). */
function endpoint(base: URL, path: string): URL {
  const url = new URL(base.href.endsWith('/') ? base.href : `${base.href}/`);
  return new URL(path, url);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function stripTags(text: string): string {
  return text.replace(/<[^>]*>/g, '');
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
