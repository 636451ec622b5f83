/**
 * HTML reduced to text a model can read: the title and the main text, with links kept as
 * `text (url)`. Scripts, styles and page furniture (navigation, header, footer, aside, forms)
 * are dropped; `<main>` or `<article>` is preferred to the whole body when the page has one.
 */
import { createRequire } from 'node:module';
import type * as NodeHtmlParser from 'node-html-parser';
import type { Node } from 'node-html-parser';

type HtmlParser = typeof NodeHtmlParser;
let loaded: HtmlParser | undefined;

/** node-html-parser, loaded with the first page read: a daemon that fetches none does not hold it. */
function htmlParser(): HtmlParser {
  return (loaded ??= createRequire(import.meta.url)('node-html-parser') as HtmlParser);
}

/** The title and readable text of an HTML page. */
export interface ReadableHtml {
  title: string;
  text: string;
}

const DROPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'head']);
const FURNITURE = new Set(['nav', 'header', 'footer', 'aside', 'form', 'button', 'select']);
const BLOCKS = new Set([
  'address',
  'article',
  'blockquote',
  'dd',
  'details',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'li',
  'main',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tr',
  'ul',
  'body',
  'html',
]);

/**
 * Converts `html` to readable text; relative links resolve against `baseUrl`. Throws nothing:
 * malformed HTML gives whatever text the parser recovers.
 *
 * @example
 * ```ts
 * htmlToReadableText('<title>T</title><p>Hi <a href="/x">there</a></p>', 'https://a.example/');
 * // { title: 'T', text: 'Hi there (https://a.example/x)' }
 * ```
 */
export function htmlToReadableText(html: string, baseUrl: string): ReadableHtml {
  const root = htmlParser().parse(html, { comment: false, blockTextElements: { pre: true } });
  const title = collapse(root.querySelector('title')?.text ?? '');
  const main = root.querySelector('main') ?? root.querySelector('article') ?? root.querySelector('body') ?? root;
  const parts: string[] = [];
  walk(main, baseUrl, parts, false);
  const text = parts
    .join('')
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text };
}

function walk(node: Node, baseUrl: string, parts: string[], inPre: boolean): void {
  const { HTMLElement, NodeType } = htmlParser();
  if (node.nodeType === NodeType.TEXT_NODE) {
    parts.push(inPre ? node.text : node.text.replace(/\s+/g, ' '));
    return;
  }
  if (!(node instanceof HTMLElement)) {
    return;
  }
  const tag = node.rawTagName?.toLowerCase() ?? '';
  if (DROPPED.has(tag) || FURNITURE.has(tag) || node.getAttribute('hidden') !== undefined || node.getAttribute('aria-hidden') === 'true') {
    return;
  }
  if (tag === 'br') {
    parts.push('\n');
    return;
  }
  if (tag === 'img') {
    const alt = node.getAttribute('alt')?.trim();
    if (alt !== undefined && alt !== '') {
      parts.push(`[image: ${alt}]`);
    }
    return;
  }
  const isBlock = BLOCKS.has(tag);
  if (isBlock) {
    parts.push('\n\n');
  }
  if (/^h[1-6]$/.test(tag)) {
    parts.push(`${'#'.repeat(Number(tag.slice(1)))} `);
  } else if (tag === 'li') {
    parts.push('- ');
  } else if (tag === 'td' || tag === 'th') {
    parts.push(' | ');
  }
  const linkStart = parts.length;
  for (const child of node.childNodes) {
    walk(child, baseUrl, parts, inPre || tag === 'pre');
  }
  if (tag === 'a') {
    const href = resolveLink(node.getAttribute('href'), baseUrl);
    const label = collapse(parts.slice(linkStart).join(''));
    if (href !== undefined && label !== href) {
      parts.push(label === '' ? href : ` (${href})`);
    }
  }
  if (isBlock) {
    parts.push('\n\n');
  }
}

function resolveLink(href: string | undefined, baseUrl: string): string | undefined {
  if (href === undefined || href.trim() === '' || href.startsWith('#') || /^(javascript|mailto|data):/i.test(href.trim())) {
    return undefined;
  }
  try {
    return new URL(href.trim(), baseUrl).href;
  } catch {
    return undefined;
  }
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
