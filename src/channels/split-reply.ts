/**
 * `text` in parts of at most `max` characters, cut at the last paragraph break, else line break,
 * else space in the second half of each part (a word longer than that is cut where it must be).
 */
export function splitReply(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max);
    const cut = [window.lastIndexOf('\n\n'), window.lastIndexOf('\n'), window.lastIndexOf(' ')].find((index) => index >= max / 2) ?? max;
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest !== '' || parts.length === 0) parts.push(rest);
  return parts;
}
