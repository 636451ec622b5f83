import { createRequire } from 'node:module';
import type * as AcornModule from 'acorn';
import type { Node } from 'acorn';

/** The host APIs a sandboxed tool may name in its allowlist. */
export type SandboxApi = 'fetch' | 'fs.readFile' | 'crypto';

/** Something refused in a tool's code, where it is (1-based line and column). */
export interface CodeProblem {
  line: number;
  column: number;
  message: string;
}

// The lists below are Maps, not object literals: a lookup in an object literal also finds what
// every object inherits (`toString`, `hasOwnProperty`, `valueOf`, `constructor`), which refused
// ordinary code with a function's source for a reason.

/** Names a sandboxed tool may not use at all, and why (spec/02's blocked APIs, and realm escapes). */
const BLOCKED_NAMES: ReadonlyMap<string, string> = new Map([
  ['eval', 'it runs arbitrary code'],
  ['Function', 'it builds functions from text, which runs arbitrary code'],
  ['require', 'there is no module system in the sandbox'],
  ['process', 'there is no process in the sandbox'],
  ['child_process', 'a tool may not start processes'],
  ['module', 'there is no module system in the sandbox'],
  ['exports', 'there is no module system in the sandbox'],
  ['WebAssembly', 'a tool may not compile other code'],
  ['Atomics', 'a tool may not share memory'],
  ['SharedArrayBuffer', 'a tool may not share memory'],
  ['importScripts', 'a tool may not load code'],
]);

/**
 * Properties whose access is a known road out of a realm or into its prototypes: read as a
 * member (`f.constructor`, `f["constructor"]`) or taken out by destructuring
 * (`const { constructor } = f`). An object literal may still use them as data keys
 * (`{ constructor: 1 }`), and a class its `constructor()`.
 */
const BLOCKED_PROPERTIES: ReadonlyMap<string, string> = new Map([
  ['constructor', 'it reaches the Function constructor, a way to run arbitrary code'],
  ['__proto__', 'it rewrites prototypes'],
  ['__defineGetter__', "it rewrites objects behind the code's back"],
  ['__defineSetter__', "it rewrites objects behind the code's back"],
  ['__lookupGetter__', 'it reaches hidden accessors'],
  ['prepareStackTrace', "it reaches the engine's stack frames"],
  ['caller', 'it reaches the calling function'],
  ['callee', 'it reaches the calling function'],
]);

/** `fs` methods that change files: never allowed (only `fs.readFile` is). */
const FS_MUTATORS = new Set([
  'writeFile',
  'writeFileSync',
  'appendFile',
  'appendFileSync',
  'unlink',
  'unlinkSync',
  'mkdir',
  'mkdirSync',
  'rm',
  'rmSync',
  'rmdir',
  'rmdirSync',
  'rename',
  'renameSync',
  'copyFile',
  'copyFileSync',
  'cp',
  'symlink',
  'link',
  'chmod',
  'chown',
  'truncate',
  'open',
  'openSync',
  'createWriteStream',
  'utimes',
]);

/** Free names a tool uses that only an allowlisted API provides. */
const API_OF_NAME: ReadonlyMap<string, SandboxApi> = new Map([
  ['fetch', 'fetch'],
  ['fs', 'fs.readFile'],
  ['crypto', 'crypto'],
]);

type AnyNode = Node & Record<string, unknown>;

function isNode(value: unknown): value is AnyNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** Every node under `root`, each with its parent, depth first. */
function walk(root: AnyNode, visit: (node: AnyNode, parent: AnyNode | undefined) => void): void {
  const stack: [AnyNode, AnyNode | undefined][] = [[root, undefined]];
  while (stack.length > 0) {
    const [node, parent] = stack.pop() as [AnyNode, AnyNode | undefined];
    visit(node, parent);
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type' || key === 'loc') continue;
      if (Array.isArray(value)) {
        for (let index = value.length - 1; index >= 0; index -= 1) if (isNode(value[index])) stack.push([value[index] as AnyNode, node]);
      } else if (isNode(value)) stack.push([value, node]);
    }
  }
}

/** The property a member expression names, when it is written out (`a.b`, `a["b"]`). */
function propertyName(node: AnyNode): string | undefined {
  const property = node['property'] as AnyNode;
  if (node['computed'] !== true && property.type === 'Identifier') return property['name'] as string;
  if (property.type === 'Literal' && typeof property['value'] === 'string') return property['value'];
  return undefined;
}

/** The key an object pattern's or literal's property names, when it is written out (`{ a }`, `{ "a": x }`, `{ ["a"]: x }`). */
function keyName(property: AnyNode): string | undefined {
  const key = property['key'] as AnyNode | undefined;
  if (key === undefined) return undefined;
  if (property['computed'] !== true && key.type === 'Identifier') return key['name'] as string;
  if (key.type === 'Literal' && typeof key['value'] === 'string') return key['value'];
  return undefined;
}

/** Whether `node` is `fs` or `fs.promises`, the objects whose mutators are refused. */
function isFsObject(node: AnyNode): boolean {
  if (node.type === 'Identifier') return node['name'] === 'fs';
  return (
    node.type === 'MemberExpression' &&
    (node['object'] as AnyNode).type === 'Identifier' &&
    (node['object'] as AnyNode)['name'] === 'fs' &&
    propertyName(node) === 'promises'
  );
}

/** Whether an identifier is a name in use, not a property key or a declaration's label. */
function isReference(node: AnyNode, parent: AnyNode | undefined): boolean {
  if (parent === undefined) return true;
  if (parent.type === 'MemberExpression' && parent['property'] === node && parent['computed'] !== true) return false;
  if (
    (parent.type === 'Property' || parent.type === 'MethodDefinition' || parent.type === 'PropertyDefinition') &&
    parent['key'] === node &&
    parent['computed'] !== true
  ) {
    // `{ fetch }` is both a key and a reference.
    return parent['shorthand'] === true;
  }
  if (parent.type === 'LabeledStatement' || parent.type === 'BreakStatement' || parent.type === 'ContinueStatement') return false;
  return true;
}

type Acorn = typeof AcornModule;
let acorn: Acorn | undefined;

/** The JavaScript parser, loaded with the first forged tool: a daemon that forges none does not hold it. */
export function javascriptParser(): Acorn {
  return (acorn ??= createRequire(import.meta.url)('acorn') as Acorn);
}

/**
 * Checks a sandboxed tool's code before it runs (a real JavaScript parser, no regular
 * expressions): a syntax error, a missing `execute`, spec/02's blocked APIs and known realm
 * escapes, and host APIs the allowlist does not name. A first filter for clear messages; the
 * isolate is the boundary. Returns every problem, in source order.
 */
export function checkSandboxCode(code: string, allowlist: readonly SandboxApi[]): CodeProblem[] {
  let program: AnyNode;
  try {
    program = javascriptParser().parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      locations: true,
      allowReturnOutsideFunction: false,
    }) as unknown as AnyNode;
  } catch (error) {
    const where = (error as { loc?: { line: number; column: number } }).loc;
    const message = error instanceof Error ? error.message.replace(/ \(\d+:\d+\)$/, '') : String(error);
    return [{ line: where?.line ?? 1, column: (where?.column ?? 0) + 1, message: `syntax error: ${message}` }];
  }
  const problems: CodeProblem[] = [];
  const at = (node: AnyNode, message: string): void => {
    const start = node.loc?.start;
    problems.push({ line: start?.line ?? 1, column: (start?.column ?? 0) + 1, message });
  };
  const allowed = new Set<string>(allowlist);
  const reported = new Set<string>();

  walk(program, (node, parent) => {
    switch (node.type) {
      case 'ImportExpression':
        at(node, '"import()" is not allowed in a sandboxed tool: there is no module system in the sandbox');
        break;
      case 'ImportDeclaration':
      case 'ExportNamedDeclaration':
      case 'ExportDefaultDeclaration':
      case 'ExportAllDeclaration':
        at(node, 'import and export are not allowed in a sandboxed tool: it is one script defining execute(input)');
        break;
      case 'MetaProperty':
        // `new.target` is plain JavaScript; only `import.meta` reaches for a module system.
        if ((node['meta'] as AnyNode)['name'] !== 'new')
          at(node, `"${String((node['meta'] as AnyNode)['name'])}.${String((node['property'] as AnyNode)['name'])}" is not allowed in a sandboxed tool`);
        break;
      case 'VariableDeclarator': {
        // `const { writeFile } = fs` (or `fs.promises`) names a mutator without a member access.
        const id = node['id'] as AnyNode;
        const init = node['init'] as AnyNode | null;
        if (id.type !== 'ObjectPattern' || init === null || !isFsObject(init)) break;
        for (const property of id['properties'] as AnyNode[]) {
          const name = keyName(property);
          if (name !== undefined && FS_MUTATORS.has(name))
            at(property['key'] as AnyNode, `"fs.${name}" is not allowed in a sandboxed tool: a tool may only read files (fs.readFile)`);
        }
        break;
      }
      case 'ObjectPattern':
        // `const { constructor } = f` reads `f.constructor` as surely as the member access does.
        for (const property of node['properties'] as AnyNode[]) {
          const name = keyName(property);
          const blocked = name === undefined ? undefined : BLOCKED_PROPERTIES.get(name);
          if (blocked !== undefined) at(property['key'] as AnyNode, `".${String(name)}" is not allowed in a sandboxed tool: ${blocked}`);
        }
        break;
      case 'Identifier': {
        const name = node['name'] as string;
        if (!isReference(node, parent)) break;
        const blocked = BLOCKED_NAMES.get(name);
        if (blocked !== undefined) {
          at(node, `"${name}" is not allowed in a sandboxed tool: ${blocked}`);
          break;
        }
        const api = API_OF_NAME.get(name);
        if (api !== undefined && !allowed.has(api) && !reported.has(api)) {
          reported.add(api);
          at(
            node,
            `"${name}" is used but "${api}" is not in the tool's allowlist; add "${api}" to implementation.allowlist (and the agent's [emergent].allowed_sandbox_apis)`,
          );
        }
        break;
      }
      case 'MemberExpression': {
        const name = propertyName(node);
        const object = node['object'] as AnyNode;
        if (name === undefined) {
          if (isFsObject(object)) at(node, 'computed access on "fs" (fs[...]) is not allowed in a sandboxed tool: name the method, fs.readFile');
          break;
        }
        const blocked = BLOCKED_PROPERTIES.get(name);
        if (blocked !== undefined) at(node['property'] as AnyNode, `".${name}" is not allowed in a sandboxed tool: ${blocked}`);
        else if (isFsObject(object) && FS_MUTATORS.has(name))
          at(node['property'] as AnyNode, `"fs.${name}" is not allowed in a sandboxed tool: a tool may only read files (fs.readFile)`);
        break;
      }
      default:
        break;
    }
  });

  const declaresExecute = (program['body'] as AnyNode[]).some((statement) => {
    if (statement.type === 'FunctionDeclaration') return (statement['id'] as AnyNode | null)?.['name'] === 'execute';
    if (statement.type === 'VariableDeclaration')
      return (statement['declarations'] as AnyNode[]).some((declaration) => (declaration['id'] as AnyNode)['name'] === 'execute');
    return false;
  });
  if (!declaresExecute)
    problems.push({
      line: 1,
      column: 1,
      message: 'a sandboxed tool must define execute(input) at the top level: function execute(input) { … return result; }',
    });
  return problems.sort((first, second) => first.line - second.line || first.column - second.column);
}

/** Problems as one message: `line 3, column 5: "eval" is not allowed …; …`. */
export function formatCodeProblems(problems: readonly CodeProblem[]): string {
  return problems.map((problem) => `line ${problem.line}, column ${problem.column}: ${problem.message}`).join('; ');
}
