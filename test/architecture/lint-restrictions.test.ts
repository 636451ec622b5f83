import { fileURLToPath } from 'node:url';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { LAYERING } from './layering-rules.ts';
import { layeringLintConfig } from './lint-restrictions.ts';

const linter = new Linter({ configType: 'flat', cwd: fileURLToPath(new URL('../../', import.meta.url)) });
const config: Linter.Config[] = [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, ...layeringLintConfig(LAYERING)];

/** What the lint config says of `code` written in `file` (relative to the repository). */
function lint(file: string, code: string): string[] {
  return linter.verify(code, config, { filename: file }).map((message) => `${message.line}: ${message.message}`);
}

describe('the layering in the lint config', () => {
  it('refuses an import up the floors, a type import too: tools/ never imports kernel/', () => {
    expect(lint('src/tools/builtin/new-tool.ts', "import type { Kernel } from '../../kernel/index.ts';\nexport type K = Kernel;\n")).toEqual([
      "1: '../../kernel/index.ts' import is restricted from being used by a pattern. src/tools/ (floor 4) may not import src/kernel/ (floor 7), which stands above it; the floors are in test/architecture/layering-rules.ts.",
    ]);
  });

  it('refuses an import past an index but for the listed entries and leaves', () => {
    expect(
      lint(
        'src/kernel/new-part.ts',
        "export { LoomError } from '../errors/loom-error.ts';\nexport { installedPath } from '../config/installation.ts';\nexport { withSpan } from '../telemetry/spans.ts';\n",
      ),
    ).toEqual([
      "1: '../errors/loom-error.ts' import is restricted from being used by a pattern. import src/errors/ through its index.ts; an entry that must load alone is listed, with the reason, in test/architecture/layering-rules.ts.",
    ]);
    expect(lint('src/http/new-route.ts', "import { a2aSendTool } from '../a2a/external-agents.ts';\nexport const tool = a2aSendTool;\n")).toEqual([]);
  });

  it('refuses a node: module in the runtime beyond the allowed ones', () => {
    expect(
      lint(
        'src/runtime/new-layer.ts',
        "import { createHash } from 'node:crypto';\nimport { readFile } from 'node:fs/promises';\nexport { createHash, readFile };\n",
      ),
    ).toEqual([
      "2: 'node:fs/promises' import is restricted from being used by a pattern. src/runtime/ stays free of Node's edges (STYLE.md): take the resource as a dependency; the allowed node: modules are in test/architecture/layering-rules.ts.",
    ]);
  });
});
