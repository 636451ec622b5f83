import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** A link written in a Markdown file: where it stands and what it points at. */
export interface MarkdownLink {
  file: string;
  line: number;
  target: string;
}

/** Lines of `text` outside fenced code blocks (``` or ~~~), with their line numbers; inline code spans blanked out. */
function proseLines(text: string): { line: number; text: string; raw: string }[] {
  const result: { line: number; text: string; raw: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0];
      else if (marker[0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined) result.push({ line: index + 1, raw: line, text: line.replace(/(`+)(?:(?!\1).)+?\1/g, (span) => ' '.repeat(span.length)) });
  });
  return result;
}

/** Every inline link and image (`[text](target)`, `![alt](target)`) and reference definition (`[name]: target`) in `file`. */
export function linksIn(file: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text } of proseLines(readFileSync(file, 'utf8'))) {
    for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ file, line, target: match[1] ?? '' });
    const definition = /^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/.exec(text);
    if (definition?.[1] !== undefined) links.push({ file, line, target: definition[1] });
  }
  return links;
}

/**
 * The anchors GitHub gives a Markdown file's headings (lower case, punctuation dropped, spaces as
 * `-`, a repeated heading numbered `-1`, `-2`, …), plus any `<a id>`/`<a name>` written in it.
 */
export function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text, raw } of proseLines(readFileSync(file, 'utf8'))) {
    for (const match of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1] ?? '');
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw)?.[1];
    if (heading === undefined) continue;
    const slug = headingSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** GitHub's anchor for a heading's text (what github-slugger computes). */
export function headingSlug(heading: string): string {
  // A link's text stays, its target goes; HTML tags go, but not inside code spans, where `<name>` is text.
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/<[^>]+>/g, '')))
    .join('');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** What is wrong with `link` (a file or an anchor that does not exist), or undefined when it resolves. External links are not checked. */
export function problemOf(link: MarkdownLink, root: string): string | undefined {
  const { target } = link;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // http:, https:, mailto:
  const [pathPart = '', hash] = target.split('#', 2);
  const path = decodeURIComponent(pathPart);
  const file = path === '' ? link.file : resolve(dirname(link.file), path);
  const where = `${relative(root, link.file)}:${link.line}`;
  if (!file.startsWith(root)) return `${where}: "${target}" points outside the repository`;
  if (!existsSync(file)) return `${where}: "${target}" points at ${relative(root, file)}, which does not exist`;
  if (hash === undefined || hash === '') return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return undefined;
  if (/^L\d+/.test(hash)) return undefined;
  if (!anchorsOf(file).has(decodeURIComponent(hash))) return `${where}: "${target}": ${relative(root, file)} has no heading with the anchor #${hash}`;
  return undefined;
}

/** The Markdown files under `folder`, recursively. */
export function markdownFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}
