import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { useLayoutEffect, useMemo, useRef } from 'preact/hooks';

const marked = new Marked({ gfm: true, breaks: false, async: false });

// Links from a model open in a new tab that cannot reach back into the dashboard.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/**
 * An agent's Markdown as safe HTML: rendered by `marked` (GitHub's dialect: tables, fenced code),
 * then sanitised by DOMPurify, so nothing the model writes (a `<script>`, an `onerror`, a
 * `javascript:` link, a form) runs or reaches the page.
 */
function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'], FORBID_ATTR: ['style'] });
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
