/**
 * The code check judges a name by its own lists only: what every object inherits
 * (`toString`, `hasOwnProperty`, `valueOf`, `constructor`) is ordinary code, while the realm
 * escapes the lists name stay refused however they are spelled.
 */
import { describe, expect, it } from 'vitest';
import { checkSandboxCode } from '../../src/forged-tools/index.ts';

function check(body: string): ReturnType<typeof checkSandboxCode> {
  return checkSandboxCode(`function execute(input) {\n${body}\n}`, []);
}

describe('checkSandboxCode() and the names every object inherits', () => {
  const ordinary: Record<string, string> = {
    '(255).toString(16)': '  return { hex: (255).toString(16) };',
    'String(x) and x.toString()': '  const n = input.count; return { a: n.toString(), b: String(n) };',
    'obj.hasOwnProperty(key)': '  const o = input.record; return Object.keys(o).filter((key) => o.hasOwnProperty(key));',
    'Object.prototype.hasOwnProperty.call': '  return { own: Object.prototype.hasOwnProperty.call(input, "a") };',
    'a variable named valueOf': '  const valueOf = input.n * 2; return { valueOf };',
    'a variable named toString': '  let toString = "x"; toString += "y"; return toString;',
    'a function named hasOwnProperty': '  function hasOwnProperty(o, k) { return Object.hasOwn(o, k); } return hasOwnProperty(input, "a");',
    'x.valueOf()': '  return new Date(input.at).valueOf();',
    'constructor, toString and valueOf as data keys': '  return { constructor: 1, toString: 2, valueOf: 3, hasOwnProperty: 4, "isPrototypeOf": 5 };',
    'a variable named constructor': '  const constructor = input.kind; return { constructor };',
    'a class with a constructor()': '  class Point { constructor(x) { this.x = x; } toString() { return String(this.x); } } return new Point(1).toString();',
    'a parameter named toString': '  const show = (toString) => toString; return show(1);',
    'destructuring valueOf and toString': '  const { valueOf, toString: text } = input; return [valueOf, text];',
  };
  for (const [name, body] of Object.entries(ordinary)) {
    it(`passes ordinary code using ${name}`, () => {
      expect(check(body)).toEqual([]);
    });
  }

  const escapes: Record<string, [string, string]> = {
    // The escape corpus of escape-corpus.test.ts, through the check this time.
    'Function constructor through a function': [
      '  return typeof (() => 0).constructor.constructor("return typeof process")();',
      '".constructor" is not allowed in a sandboxed tool: it reaches the Function constructor',
    ],
    'async function constructor': [
      '  const AsyncFunction = (async () => {}).constructor; return AsyncFunction("return 1")();',
      '".constructor" is not allowed',
    ],
    'this.constructor.constructor': ['  return typeof this.constructor.constructor("return this")().process;', '".constructor" is not allowed'],
    'Error.prepareStackTrace': ['  Error.prepareStackTrace = (e, frames) => frames; return 1;', '".prepareStackTrace" is not allowed'],
    'arguments.callee.caller': ['  function probe() { return arguments.callee.caller; } return probe();', '".callee" is not allowed'],
    'import()': ['  return import("node:fs");', '"import()" is not allowed'],
    // The same properties taken out by destructuring.
    'const { constructor } = f': [
      '  const { constructor } = () => 0; return constructor("return 1")();',
      '".constructor" is not allowed in a sandboxed tool: it reaches the Function constructor',
    ],
    'const { constructor: F } = f': ['  const { constructor: F } = () => 0; return F("return 1")();', '".constructor" is not allowed'],
    'const { ["constructor"]: F } = f': ['  const { ["constructor"]: F } = () => 0; return F("return 1")();', '".constructor" is not allowed'],
    'a parameter destructuring __proto__': ['  const f = ({ __proto__: p }) => p; return f({});', '".__proto__" is not allowed'],
    'x["__defineGetter__"]': ['  input["__defineGetter__"]("a", () => 1); return 1;', '".__defineGetter__" is not allowed'],
    // The blocked names, still blocked.
    eval: ['  return eval("1");', '"eval" is not allowed'],
    Function: ['  return Function("return 1")();', '"Function" is not allowed'],
    require: ['  return require("fs");', '"require" is not allowed'],
    process: ['  return process.env;', '"process" is not allowed'],
    exports: ['  exports.a = 1; return 1;', '"exports" is not allowed'],
    importScripts: ['  importScripts("x"); return 1;', '"importScripts" is not allowed'],
  };
  for (const [name, [body, message]] of Object.entries(escapes)) {
    it(`still refuses ${name}`, () => {
      const problems = check(body);
      expect(problems.map((problem) => problem.message).join('; ')).toContain(message);
    });
  }

  it("gives a refusal its list's reason, never an inherited function's source", () => {
    const messages = check('  const a = (255).toString(16); const valueOf = 1; return eval(a + valueOf) + input.constructor;').map(
      (problem) => problem.message,
    );
    expect(messages).toEqual([
      '"eval" is not allowed in a sandboxed tool: it runs arbitrary code',
      '".constructor" is not allowed in a sandboxed tool: it reaches the Function constructor, a way to run arbitrary code',
    ]);
    expect(messages.join(' ')).not.toContain('[native code]');
  });

  it('asks for an allowlist entry only for fetch, fs and crypto, not for inherited names', () => {
    expect(check('  const toString = 1; const valueOf = 2; return toString + valueOf;')).toEqual([]);
    expect(check('  return fetch(input.url);').map((problem) => problem.message)).toEqual([
      '"fetch" is used but "fetch" is not in the tool\'s allowlist; add "fetch" to implementation.allowlist (and the agent\'s [emergent].allowed_sandbox_apis)',
    ]);
  });
});
