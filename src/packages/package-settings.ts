import { PackageError } from '../errors/index.ts';
import { type LoadedPackage, parseAgentJson } from './load-package.ts';
import { valueAtPath } from './package-schema.ts';

/**
 * Applies the owner's `--set path=value` overrides (spec/04 `defaults.configurable`): only the
 * dot-paths the package lists may be set; a value takes the type of the value it replaces (a
 * number stays a number); the result is validated again, as if the package had been written so.
 * @throws {PackageError} for a path not listed (naming the listed ones), a malformed setting, a
 *   value of the wrong type, or a result that does not validate.
 */
export function applySettings(loaded: LoadedPackage, settings: readonly string[]): LoadedPackage {
  if (settings.length === 0) return loaded;
  const allowed = loaded.agentJson.defaults.configurable;
  const document = structuredClone(loaded.rawAgentJson) as Record<string, unknown>;
  const source = `${loaded.slug} (--set)`;
  for (const setting of settings) {
    const equals = setting.indexOf('=');
    if (equals <= 0) throw new PackageError(`cannot set "${setting}": expected path=value, e.g. workflows.morning-briefing.trigger.cron="0 8 * * *"`);
    const path = setting.slice(0, equals).trim();
    const text = setting.slice(equals + 1);
    if (!allowed.includes(path)) {
      throw new PackageError(
        `cannot set "${path}": package "${loaded.slug}" lets the owner set ${allowed.length === 0 ? 'nothing (its defaults.configurable is empty)' : `only ${allowed.map((entry) => `"${entry}"`).join(', ')}`}`,
        { details: { path, allowed: [...allowed] } },
      );
    }
    const segments = path.split('.');
    const current = valueAtPath(document, segments);
    let value: unknown = text;
    if (typeof current === 'number') {
      value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value)) throw new PackageError(`cannot set "${path}": expected a number, got "${text}"`);
    } else if (typeof current === 'boolean') {
      if (text !== 'true' && text !== 'false') throw new PackageError(`cannot set "${path}": expected true or false, got "${text}"`);
      value = text === 'true';
    }
    const parent = valueAtPath(document, segments.slice(0, -1));
    const key = segments.at(-1) ?? '';
    // The schema admits only own string, number and boolean values; checked again where it is written.
    if (typeof parent !== 'object' || parent === null || !Object.hasOwn(parent, key) || typeof current === 'object' || current === undefined) {
      throw new PackageError(`cannot set "${path}": it does not name a string, number or boolean in agent.json`);
    }
    Object.defineProperty(parent, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return { ...loaded, rawAgentJson: document, agentJson: parseAgentJson(document, source) };
}
