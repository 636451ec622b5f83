import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileListTool } from '../../src/tools/builtin/file-list.ts';
import { fileReadTool, MAX_READ_BYTES } from '../../src/tools/builtin/file-read.ts';
import { fileWriteTool } from '../../src/tools/builtin/file-write.ts';
import { ToolInputError } from '../../src/tools/builtin/tool-input-error.ts';
import { createToolContext } from './tool-context.ts';

let root: string;
let workspace: string;
let outside: string;

beforeEach(async () => {
  // realpath: on some systems the temp folder itself sits behind a link (/tmp -> /private/tmp).
  root = await realpath(await mkdtemp(join(tmpdir(), 'loom-file-tools-')));
  workspace = join(root, 'workspace');
  outside = join(root, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const context = (signal?: AbortSignal) => createToolContext(signal === undefined ? { workspace } : { workspace, signal });

describe('file_read', () => {
  it('file_read returns the text of a file given by a path relative to the workspace', async () => {
    await mkdir(join(workspace, 'notes'));
    await writeFile(join(workspace, 'notes', 'todo.txt'), 'buy milk\n');
    const result = await fileReadTool.execute({ path: 'notes/todo.txt' }, context());
    expect(result).toEqual({ text: 'buy milk\n' });
  });

  it('file_read reads an absolute path as is', async () => {
    await writeFile(join(outside, 'data.txt'), 'outside data');
    const result = await fileReadTool.execute({ path: join(outside, 'data.txt') }, context());
    expect(result.text).toBe('outside data');
  });

  it('file_read requires no capability for a file inside the workspace, even one that does not exist', async () => {
    await writeFile(join(workspace, 'a.txt'), 'a');
    expect(await fileReadTool.requires({ path: 'a.txt' }, context())).toEqual([]);
    expect(await fileReadTool.requires({ path: join(workspace, 'missing', 'b.txt') }, context())).toEqual([]);
    expect(await fileReadTool.requires({ path: '.' }, context())).toEqual([]);
  });

  it('file_read requires file_read on the resolved path when ".." climbs out of the workspace', async () => {
    const required = await fileReadTool.requires({ path: '../outside/secret.txt' }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: join(outside, 'secret.txt') }]);
  });

  it('file_read requires file_read on the target of a link inside the workspace that points outside', async () => {
    await writeFile(join(outside, 'passwd'), 'root:x:0:0');
    await symlink(join(outside, 'passwd'), join(workspace, 'innocent.txt'));
    const required = await fileReadTool.requires({ path: 'innocent.txt' }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: join(outside, 'passwd') }]);
  });

  it('file_read treats a folder link to outside as outside, for files below it', async () => {
    await symlink(outside, join(workspace, 'shortcut'));
    const required = await fileReadTool.requires({ path: 'shortcut/nested/file.txt' }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: join(outside, 'nested', 'file.txt') }]);
  });

  it('file_read follows a link before "..", as the OS does, when the path goes link/..', async () => {
    await mkdir(join(outside, 'deep'));
    await symlink(join(outside, 'deep'), join(workspace, 'deep-link'));
    // The OS resolves deep-link/.. to outside/, not to the workspace.
    const required = await fileReadTool.requires({ path: 'deep-link/../x.txt' }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: join(outside, 'x.txt') }]);
  });

  it('file_read does not count a sibling folder whose name starts with the workspace name as inside', async () => {
    await mkdir(`${workspace}-evil`);
    const required = await fileReadTool.requires({ path: `${workspace}-evil/x.txt` }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: `${workspace}-evil/x.txt` }]);
  });

  it('file_read requires file_read on the target of a dangling link pointing outside', async () => {
    await symlink(join(outside, 'not-yet.txt'), join(workspace, 'dangling.txt'));
    const required = await fileReadTool.requires({ path: 'dangling.txt' }, context());
    expect(required).toEqual([{ kind: 'file_read', pattern: join(outside, 'not-yet.txt') }]);
  });

  it('file_read refuses a path holding a NUL with a ToolInputError from requires', async () => {
    await expect(fileReadTool.requires({ path: 'a\0b' }, context())).rejects.toBeInstanceOf(ToolInputError);
  });

  it('file_read gives an error result naming the path as given when the file is missing', async () => {
    const result = await fileReadTool.execute({ path: 'missing.txt' }, context());
    expect(result).toEqual({ text: 'cannot read "missing.txt": no such file or folder', isError: true });
  });

  it('file_read gives an error result when the path is a folder', async () => {
    await mkdir(join(workspace, 'folder'));
    const result = await fileReadTool.execute({ path: 'folder' }, context());
    expect(result.isError).toBe(true);
    expect(result.text).toBe('cannot read "folder": it is a folder; use file_list');
  });

  it('file_read refuses a binary file (one holding NUL bytes)', async () => {
    await writeFile(join(workspace, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    const result = await fileReadTool.execute({ path: 'image.png' }, context());
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^cannot read "image\.png": it looks binary/);
  });

  it('file_read refuses a file over 10 MB', async () => {
    await writeFile(join(workspace, 'huge.log'), Buffer.alloc(MAX_READ_BYTES + 1, 'a'));
    const result = await fileReadTool.execute({ path: 'huge.log' }, context());
    expect(result.isError).toBe(true);
    expect(result.text).toContain(`it is ${MAX_READ_BYTES + 1} bytes, over the ${MAX_READ_BYTES}-byte limit`);
  });

  it('file_read rejects when its signal is already aborted', async () => {
    await writeFile(join(workspace, 'a.txt'), 'a');
    const controller = new AbortController();
    controller.abort(new Error('timed out'));
    await expect(fileReadTool.execute({ path: 'a.txt' }, context(controller.signal))).rejects.toThrow('timed out');
  });
});

describe('file_write', () => {
  it('file_write writes a file in the workspace and reports the bytes written', async () => {
    const result = await fileWriteTool.execute({ path: 'out.txt', content: 'héllo' }, context());
    expect(result).toEqual({ text: 'wrote 6 bytes to "out.txt"', structured: { bytes: 6 } });
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('héllo');
  });

  it('file_write creates missing parent folders', async () => {
    await fileWriteTool.execute({ path: 'a/b/c/deep.txt', content: 'deep' }, context());
    expect(await readFile(join(workspace, 'a', 'b', 'c', 'deep.txt'), 'utf8')).toBe('deep');
  });

  it('file_write replaces an existing file, keeping its mode and leaving no temporary file', async () => {
    const target = join(workspace, 'script.sh');
    await writeFile(target, 'old', { mode: 0o750 });
    await fileWriteTool.execute({ path: 'script.sh', content: 'new' }, context());
    expect(await readFile(target, 'utf8')).toBe('new');
    expect((await stat(target)).mode & 0o777).toBe(0o750);
    expect(await readdir(workspace)).toEqual(['script.sh']);
  });

  it('file_write requires nothing inside the workspace and file_write on the resolved path outside it', async () => {
    expect(await fileWriteTool.requires({ path: 'new/file.txt', content: '' }, context())).toEqual([]);
    expect(await fileWriteTool.requires({ path: '../outside/new/file.txt', content: '' }, context())).toEqual([
      { kind: 'file_write', pattern: join(outside, 'new', 'file.txt') },
    ]);
  });

  it('file_write requires file_write on the target when a folder link in the workspace points outside', async () => {
    await symlink(outside, join(workspace, 'escape'));
    expect(await fileWriteTool.requires({ path: 'escape/new/file.txt', content: '' }, context())).toEqual([
      { kind: 'file_write', pattern: join(outside, 'new', 'file.txt') },
    ]);
  });

  it('file_write writes to the resolved path, so a link is never replaced by a file', async () => {
    await writeFile(join(workspace, 'real.txt'), 'old');
    await symlink(join(workspace, 'real.txt'), join(workspace, 'alias.txt'));
    await fileWriteTool.execute({ path: 'alias.txt', content: 'new' }, context());
    expect(await readFile(join(workspace, 'real.txt'), 'utf8')).toBe('new');
  });

  it('file_write gives an error result naming the path when the path is a folder', async () => {
    await mkdir(join(workspace, 'folder'));
    const result = await fileWriteTool.execute({ path: 'folder', content: 'x' }, context());
    expect(result).toEqual({ text: 'cannot write "folder": it is a folder', isError: true });
  });

  it('file_write gives an error result when a part of the path is a file', async () => {
    await writeFile(join(workspace, 'file.txt'), 'x');
    const result = await fileWriteTool.execute({ path: 'file.txt/inner.txt', content: 'x' }, context());
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^cannot write "file\.txt\/inner\.txt": /);
  });
});

describe('file_list', () => {
  it('file_list lists a folder sorted, one entry per line, folders with a trailing slash', async () => {
    await writeFile(join(workspace, 'b.txt'), '');
    await writeFile(join(workspace, 'a.txt'), '');
    await mkdir(join(workspace, 'c-folder'));
    await mkdir(join(workspace, 'A-folder'));
    const result = await fileListTool.execute({ path: '.' }, context());
    expect(result.text).toBe('A-folder/\na.txt\nb.txt\nc-folder/');
    expect(result.isError).toBeUndefined();
  });

  it('file_list says so for an empty folder', async () => {
    await mkdir(join(workspace, 'empty'));
    expect((await fileListTool.execute({ path: 'empty' }, context())).text).toBe('(empty folder)');
  });

  it('file_list requires file_read on a folder outside the workspace and nothing inside', async () => {
    expect(await fileListTool.requires({ path: 'sub' }, context())).toEqual([]);
    expect(await fileListTool.requires({ path: outside }, context())).toEqual([{ kind: 'file_read', pattern: outside }]);
  });

  it('file_list gives an error result for a missing folder and for a file', async () => {
    await writeFile(join(workspace, 'file.txt'), '');
    expect(await fileListTool.execute({ path: 'nope' }, context())).toEqual({
      text: 'cannot list "nope": no such file or folder',
      isError: true,
    });
    expect(await fileListTool.execute({ path: 'file.txt' }, context())).toEqual({
      text: 'cannot list "file.txt": it is not a folder; use file_read',
      isError: true,
    });
  });
});
