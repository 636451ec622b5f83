import { readFile } from 'node:fs/promises';

/** Fields of /proc/<pid>/stat after the command's closing parenthesis (field 3 is index 0); undefined when the process is gone. */
export async function procStat(pid: number | string): Promise<number[] | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    return text
      .slice(text.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  } catch {
    return undefined;
  }
}
