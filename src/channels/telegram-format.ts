import { Marked, Tokenizer, type Tokens } from 'marked';

/**
 * Markdown (what models write) as the HTML subset Telegram shows (`parse_mode: "HTML"`): bold,
 * italic, strikethrough, code, preformatted blocks, links and block quotes; headings become bold
 * lines, lists become bullet or numbered lines, tables preformatted rows. Everything else is
 * escaped text, so a reply can never carry markup Telegram would refuse or a tag it would obey
 * unasked. Parsed by `marked`; only its renderer and the bounds below are Loom's.
 */

/**
 * How deep quotes, lists, emphasis and links may nest in a formatted reply. `marked` parses each
 * level by recursion and again reads all that a level holds, so a reply of a few thousand nested
 * `>` overflowed the stack and one of a few hundred took time in the square of its length; past
 * this depth the reply goes as plain text. No reply a person reads nests this deep.
 */
export const MAX_FORMATTED_NESTING = 16;

/** The longest Markdown formatted (a Telegram message holds 4,096 characters); a longer text goes as plain text. */
export const MAX_FORMATTED_LENGTH = 16_384;

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function escapeAttribute(text: string): string {
  return escape(text).replaceAll('"', '&quot;');
}

/** Thrown inside the parse when a reply nests past {@link MAX_FORMATTED_NESTING}. */
class NestingTooDeep extends Error {}

/** How deep the parse under way is inside quotes, lists, emphasis and links (one parse runs at a time: it is synchronous). */
let depth = 0;

/**
 * Runs one of `marked`'s own tokenizer methods a level deeper. Each is tried wherever its token
 * might start, also inside the deepest container, so the attempt one level past
 * {@link MAX_FORMATTED_NESTING} is let through; only what a token found there would hold is refused.
 */
function deeper<T>(parse: () => T): T {
  if (depth > MAX_FORMATTED_NESTING) throw new NestingTooDeep();
  depth += 1;
  try {
    return parse();
  } finally {
    depth -= 1;
  }
}

const telegram = new Marked({
  async: false,
  gfm: true,
  // Each of these parses what it holds by calling back into the lexer: counted, that recursion
  // is the nesting. Each calls `marked`'s own method, so the parse is unchanged below the bound.
  tokenizer: {
    blockquote(src) {
      return deeper(() => Tokenizer.prototype.blockquote.call(this, src));
    },
    list(src) {
      return deeper(() => Tokenizer.prototype.list.call(this, src));
    },
    emStrong(src, maskedSrc, prevChar) {
      return deeper(() => Tokenizer.prototype.emStrong.call(this, src, maskedSrc, prevChar));
    },
    del(src, maskedSrc, prevChar) {
      return deeper(() => Tokenizer.prototype.del.call(this, src, maskedSrc, prevChar));
    },
    link(src) {
      return deeper(() => Tokenizer.prototype.link.call(this, src));
    },
    reflink(src, links) {
      return deeper(() => Tokenizer.prototype.reflink.call(this, src, links));
    },
  },
  renderer: {
    space: () => '',
    code: ({ text, lang }) =>
      `<pre>${lang === undefined || lang === '' ? '<code>' : `<code class="language-${escapeAttribute(lang.split(/\s/)[0] ?? '')}">`}${escape(text)}</code></pre>\n\n`,
    blockquote({ tokens }) {
      return `<blockquote>${this.parser.parse(tokens).trim()}</blockquote>\n\n`;
    },
    html: (token) => ('block' in token && token.block ? `${escape(token.text.trim())}\n\n` : escape(token.text)),
    heading({ tokens }) {
      return `<b>${this.parser.parseInline(tokens)}</b>\n\n`;
    },
    hr: () => '———\n\n',
    list(token: Tokens.List) {
      const start = token.start === '' ? 1 : token.start;
      const lines = token.items.map((item, index) => {
        const mark = item.task ? (item.checked === true ? '☑' : '☐') : token.ordered ? `${start + index}.` : '•';
        // Each of the item's blocks on a line of its own: a tight item's text has no line end, and
        // a list nested under it would otherwise run on from it.
        const blocks = item.tokens.map((block) => this.parser.parse([block]).trim()).filter((text) => text !== '');
        const body = blocks.join('\n').replaceAll('\n\n', '\n');
        return `${mark} ${body.replaceAll('\n', '\n  ')}`;
      });
      return `${lines.join('\n')}\n\n`;
    },
    checkbox: () => '',
    paragraph({ tokens }) {
      return `${this.parser.parseInline(tokens)}\n\n`;
    },
    table(token: Tokens.Table) {
      const row = (cells: Tokens.TableCell[]): string => cells.map((cell) => cell.text).join(' | ');
      return `<pre>${escape([row(token.header), ...token.rows.map(row)].join('\n'))}</pre>\n\n`;
    },
    strong({ tokens }) {
      return `<b>${this.parser.parseInline(tokens)}</b>`;
    },
    em({ tokens }) {
      return `<i>${this.parser.parseInline(tokens)}</i>`;
    },
    codespan: ({ text }) => `<code>${escape(text)}</code>`,
    br: () => '\n',
    del({ tokens }) {
      return `<s>${this.parser.parseInline(tokens)}</s>`;
    },
    link({ href, tokens }) {
      return /^(https?|mailto|tg):/i.test(href) ? `<a href="${escapeAttribute(href)}">${this.parser.parseInline(tokens)}</a>` : this.parser.parseInline(tokens);
    },
    image: ({ href, text }) => (/^https?:/i.test(href) ? `<a href="${escapeAttribute(href)}">${escape(text === '' ? href : text)}</a>` : escape(text)),
    text(token) {
      if ('tokens' in token && token.tokens !== undefined) return this.parser.parseInline(token.tokens);
      return 'escaped' in token && token.escaped === true ? token.text : escape(token.text);
    },
  },
});

/**
 * `markdown` as Telegram's HTML (see the module comment), in time linear in its length.
 * @throws {Error} when it is longer than {@link MAX_FORMATTED_LENGTH} or nests deeper than
 *   {@link MAX_FORMATTED_NESTING}: the caller sends the same words as plain text.
 */
export function toTelegramHtml(markdown: string): string {
  if (markdown.length > MAX_FORMATTED_LENGTH)
    throw new Error(`cannot format a reply of ${markdown.length} characters for Telegram: more than ${MAX_FORMATTED_LENGTH} are sent as plain text`);
  try {
    return (telegram.parse(markdown) as string).trim();
  } catch (caught) {
    // `marked` adds a plea to report the error to its message; this one is no bug of theirs.
    if (caught instanceof NestingTooDeep)
      throw new Error(
        `cannot format a reply for Telegram: its quotes, lists, emphasis or links nest deeper than ${MAX_FORMATTED_NESTING} levels, so it is sent as plain text`,
        { cause: caught },
      );
    throw caught;
  }
}
