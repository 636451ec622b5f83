import { Marked, type Tokens } from 'marked';

/**
 * Markdown (what models write) as the HTML subset Telegram shows (`parse_mode: "HTML"`): bold,
 * italic, strikethrough, code, preformatted blocks, links and block quotes; headings become bold
 * lines, lists become bullet or numbered lines, tables preformatted rows. Everything else is
 * escaped text, so a reply can never carry markup Telegram would refuse or a tag it would obey
 * unasked. Parsed by `marked`; only its renderer is Loom's.
 */

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function escapeAttribute(text: string): string {
  return escape(text).replaceAll('"', '&quot;');
}

const telegram = new Marked({
  async: false,
  gfm: true,
  renderer: {
    space: () => '',
    code: ({ text, lang }) => `<pre>${lang === undefined || lang === '' ? '<code>' : `<code class="language-${escapeAttribute(lang.split(/\s/)[0] ?? '')}">`}${escape(text)}</code></pre>\n\n`,
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
        const body = this.parser.parse(item.tokens).trim().replaceAll('\n\n', '\n');
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

/** `markdown` as Telegram's HTML (see the module comment). */
export function toTelegramHtml(markdown: string): string {
  return (telegram.parse(markdown) as string).trim();
}
