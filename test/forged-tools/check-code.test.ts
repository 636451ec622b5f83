import { describe, expect, it } from 'vitest';
import { checkSandboxCode, formatCodeProblems, type SandboxApi } from '../../src/forged-tools/index.ts';

/** spec/02's four sandbox examples, their code exactly as the spec gives it. */
const SPEC_EXAMPLES: Record<string, { code: string; allowlist: SandboxApi[] }> = {
  parse_csv: {
    code: "function execute(input) {\n const delim = input.delimiter || ',';\n const lines = input.csv.trim().split('\\n');\n const headers = lines[0].split(delim).map(h => h.trim());\n const rows = lines.slice(1).map(line => {\n const values = line.split(delim);\n return Object.fromEntries(headers.map((h, i) => [h, values[i]?.trim()]));\n });\n return { headers, rows };\n}",
    allowlist: [],
  },
  convert_temperature: {
    code: "function execute(input) {\n const { value, from, to } = input;\n let celsius;\n if (from === 'C') celsius = value;\n else if (from === 'F') celsius = (value - 32) * 5 / 9;\n else celsius = value - 273.15;\n let result;\n if (to === 'C') result = celsius;\n else if (to === 'F') result = celsius * 9 / 5 + 32;\n else result = celsius + 273.15;\n return { result: Math.round(result * 100) / 100 };\n}",
    allowlist: [],
  },
  check_http_status: {
    code: "async function execute(input) {\n const res = await fetch(input.url, { method: 'HEAD', redirect: 'follow' });\n return { status: res.status, ok: res.ok, redirected: res.redirected };\n}",
    allowlist: ['fetch'],
  },
  slugify: {
    code: "function execute(input) {\n  const slug = input.text\n    .toLowerCase()\n    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/^-|-$/g, '');\n  return { slug };\n}",
    allowlist: [],
  },
};

/** The first problem for `body` placed on line 2 of an execute function. */
function problemIn(body: string, allowlist: readonly SandboxApi[] = []) {
  return checkSandboxCode(`function execute(input) {\n${body}\n  return 1;\n}`, allowlist)[0];
}

describe('checkSandboxCode()', () => {
  for (const [name, { code, allowlist }] of Object.entries(SPEC_EXAMPLES)) {
    it(`passes spec/02's ${name} example`, () => {
      expect(checkSandboxCode(code, allowlist)).toEqual([]);
    });
  }

  it('refuses check_http_status without "fetch" in its allowlist, naming the fix', () => {
    const problems = checkSandboxCode(SPEC_EXAMPLES['check_http_status']?.code ?? '', []);
    expect(problems).toEqual([
      {
        line: 2,
        column: 20,
        message:
          '"fetch" is used but "fetch" is not in the tool\'s allowlist; add "fetch" to implementation.allowlist (and the agent\'s [emergent].allowed_sandbox_apis)',
      },
    ]);
  });

  it('refuses fs and crypto the allowlist leaves out, and lets them pass when it names them', () => {
    expect(problemIn('  const text = fs.readFile("a.txt");')?.message).toContain('"fs.readFile" is not in the tool\'s allowlist');
    expect(problemIn('  const hash = crypto.createHash("sha256");')?.message).toContain('"crypto" is not in the tool\'s allowlist');
    expect(problemIn('  const text = fs.readFile("a.txt");', ['fs.readFile'])).toBeUndefined();
    expect(problemIn('  const hash = crypto.createHash("sha256");', ['crypto'])).toBeUndefined();
  });

  const blocked: [string, string, number, string][] = [
    ['eval', '  eval("1");', 3, '"eval" is not allowed in a sandboxed tool: it runs arbitrary code'],
    ['Function', '  const f = Function("return 1");', 13, '"Function" is not allowed'],
    ['new Function', '  const f = new Function("return 1");', 17, '"Function" is not allowed'],
    ['require', '  const m = require("fs");', 13, '"require" is not allowed'],
    ['import()', '  import("node:fs");', 3, '"import()" is not allowed'],
    ['process', '  process.exit(1);', 3, '"process" is not allowed'],
    ['child_process', '  const c = child_process;', 13, '"child_process" is not allowed'],
    ['module', '  module.exports = 1;', 3, '"module" is not allowed'],
    ['.constructor', '  const F = (() => 1).constructor;', 23, '".constructor" is not allowed'],
    ['["constructor"]', '  const F = (() => 1)["constructor"];', 23, '".constructor" is not allowed'],
    ['__proto__', '  const p = ({}).__proto__;', 18, '".__proto__" is not allowed'],
    ['WebAssembly', '  WebAssembly.compile(new Uint8Array(8));', 3, '"WebAssembly" is not allowed'],
    ['Atomics', '  Atomics.wait(a, 0, 0);', 3, '"Atomics" is not allowed'],
    ['SharedArrayBuffer', '  new SharedArrayBuffer(8);', 7, '"SharedArrayBuffer" is not allowed'],
    ['fs.writeFile', '  fs.writeFile("/x", "y");', 6, '"fs.writeFile" is not allowed in a sandboxed tool: a tool may only read files (fs.readFile)'],
    ['fs.unlink', '  fs.unlink("/x");', 6, '"fs.unlink" is not allowed'],
    ['fs.mkdir', '  fs.mkdir("/x");', 6, '"fs.mkdir" is not allowed'],
    ['fs.rm', '  fs.rm("/x");', 6, '"fs.rm" is not allowed'],
    ['fs.rename', '  fs.rename("/x", "/y");', 6, '"fs.rename" is not allowed'],
    ['fs.appendFile', '  fs.appendFile("/x", "y");', 6, '"fs.appendFile" is not allowed'],
    ['fs.open', '  fs.open("/x");', 6, '"fs.open" is not allowed'],
    ['fs.promises.writeFile', '  fs.promises.writeFile("/x", "y");', 15, '"fs.writeFile" is not allowed'],
    ['a destructured fs mutator', '  const { readFile, writeFile } = fs;', 21, '"fs.writeFile" is not allowed'],
    ['fs[expression]', '  fs[input.method]("/x");', 3, 'computed access on "fs"'],
  ];
  for (const [name, body, column, message] of blocked) {
    it(`refuses ${name} at line 2, column ${column}`, () => {
      const problem = problemIn(body, ['fs.readFile']);
      expect(problem).toMatchObject({ line: 2, column });
      expect(problem?.message).toContain(message);
    });
  }

  it('refuses import and export declarations (a tool is one script)', () => {
    expect(checkSandboxCode('import fs from "node:fs";\nfunction execute() { return 1; }', [])[0]).toMatchObject({
      line: 1,
      column: 1,
      message: expect.stringContaining('syntax error') as unknown,
    });
    expect(checkSandboxCode('function execute() { return 1; }\nexport { execute };', [])[0]?.message).toContain('syntax error');
  });

  it("names a syntax error with acorn's position", () => {
    expect(checkSandboxCode('function execute(input) {\n  return {;\n}', [])).toEqual([{ line: 2, column: 11, message: 'syntax error: Unexpected token' }]);
  });

  it('asks for execute(input) when the code defines none, and accepts each way of defining it', () => {
    expect(checkSandboxCode('function run(input) { return input; }', [])).toEqual([
      { line: 1, column: 1, message: 'a sandboxed tool must define execute(input) at the top level: function execute(input) { … return result; }' },
    ]);
    expect(checkSandboxCode('function outer() { function execute() {} }', [])[0]?.message).toContain('must define execute(input)');
    for (const code of [
      'function execute(input) { return input; }',
      'async function execute(input) { return input; }',
      'const execute = (input) => input;',
      'const execute = async function (input) { return input; };',
    ]) {
      expect(checkSandboxCode(code, []), code).toEqual([]);
    }
  });

  it('lets names that only look blocked pass: keys, properties, new.target', () => {
    expect(
      checkSandboxCode(
        'function execute(input) { const o = { process: 1, eval: 2 }; function F() { return new.target; } return { n: o.process + o.eval, label: input.require }; }',
        [],
      ),
    ).toEqual([]);
  });

  it('reports every problem in source order, formatted as "line L, column C: …"', () => {
    const problems = checkSandboxCode('function execute() {\n  process.exit(1);\n  eval("x");\n}', []);
    expect(formatCodeProblems(problems)).toBe(
      'line 2, column 3: "process" is not allowed in a sandboxed tool: there is no process in the sandbox; line 3, column 3: "eval" is not allowed in a sandboxed tool: it runs arbitrary code',
    );
  });
});
