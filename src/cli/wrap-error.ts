/** Splits `text` at "; " outside double quotes: a refusal's clauses (the reason, then each detail and the fix). */
function clausesOf(text: string): string[] {
  const clauses: string[] = [];
  let quoted = false;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (character === '"') quoted = !quoted;
    else if (!quoted && character === ';' && text[index + 1] === ' ') {
      clauses.push(text.slice(start, index));
      start = index + 2;
    }
  }
  clauses.push(text.slice(start));
  return clauses.filter((clause) => clause.trim() !== '');
}

/** Wraps one line at spaces to `width` columns; lines after the first start with `indent`. */
function wrapLine(line: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  const lead = /^ */.exec(line)?.[0] ?? '';
  let current = lead;
  for (const word of line.slice(lead.length).split(' ')) {
    const candidate = current.trim() === '' ? `${current}${word}` : `${current} ${word}`;
    if (candidate.length > width && current.trim() !== '') {
      lines.push(current);
      current = `${indent}${word}`;
    } else current = candidate;
  }
  lines.push(current);
  return lines;
}

/**
 * An error message as a terminal `width` columns wide shows it: unchanged when it fits on the
 * `error:` line; else its first clause (what failed and why) on that line, each further clause
 * (details, the fix) on a line of its own, indented, and every line wrapped at spaces. Lines the
 * message holds (a list of problems) are kept.
 * @example formatErrorForTerminal('cannot spawn "x": a; b', 20) // 'error: cannot spawn\n  "x": a\n  b\n'
 */
export function formatErrorForTerminal(message: string, width: number): string {
  const single = `error: ${message}`;
  if (!single.includes('\n') && single.length <= width) return `${single}\n`;
  const lines: string[] = [];
  message.split('\n').forEach((paragraph, index) => {
    const [first = '', ...rest] = clausesOf(paragraph);
    lines.push(...(index === 0 ? wrapLine(`error: ${first}`, width, '  ') : wrapLine(`  ${first.trim()}`, width, '    ')));
    for (const clause of rest) lines.push(...wrapLine(`  ${clause.trim()}`, width, '    '));
  });
  return `${lines.join('\n')}\n`;
}
