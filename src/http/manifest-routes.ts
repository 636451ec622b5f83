import { Hono } from 'hono';
import { checkManifestText, detectManifestFormat } from '../manifest/index.ts';
import { type ModelReadinessOptions, modelWarnings } from '../models/index.ts';
import { refusalOf } from '../kernel/index.ts';
import { type HttpEnv, principalOf } from './http-context.ts';
import { manifestFormatOf, mediaTypeOf } from './request-input.ts';
import { HttpRequestError } from '../errors/index.ts';
import type { ManifestValidation } from '../wire/index.ts';

/** How long a validation waits for the manifest's model server before warning it does not answer. */
const VALIDATE_PROBE_TIMEOUT_MS = 500;

/** Media types a manifest may also come as, its format then told by its first character. */
const UNTYPED_MEDIA_TYPES: ReadonlySet<string> = new Set(['text/plain', '']);

/** What the manifest routes need. */
interface ManifestRoutesOptions {
  /** The daemon's default model and environment, to warn about an agent that could not run. */
  readiness?: ModelReadinessOptions;
}

/**
 * The manifest routes, mounted at `/api/manifests`: `POST /validate` checks a manifest (TOML or
 * JSON, by content type or by its first character) without spawning anything, and answers 200
 * with every error at its line and the warnings a spawn would give (an editor calls it as the
 * user types). Any role may ask; the warnings about whether the agent could run here (model
 * keys unset, a model server that does not answer) only the owner gets: they read the daemon's
 * environment and make a request to the address the manifest names.
 */
export function createManifestRoutes(options: ManifestRoutesOptions = {}): Hono<HttpEnv> {
  const routes = new Hono<HttpEnv>();

  routes.post('/validate', async (c) => {
    const type = mediaTypeOf(c);
    if (manifestFormatOf(type) === undefined && !UNTYPED_MEDIA_TYPES.has(type)) {
      throw new HttpRequestError('UNSUPPORTED_MEDIA_TYPE', `cannot validate a manifest: send it as "application/toml" or "application/json", got "${type}"`);
    }
    const text = await c.req.text();
    const format = manifestFormatOf(type) ?? detectManifestFormat(text);
    const check = checkManifestText(text, format);
    const warnings = [...check.warnings];
    // Whether it could run here asks the daemon's environment (which keys are set) and knocks on
    // the model server it names, wherever that is: the owner's to ask, not any key's.
    if (check.manifest !== undefined && options.readiness !== undefined && refusalOf(principalOf(c), 'probe model servers') === undefined) {
      warnings.push(...(await modelWarnings(check.manifest.name, check.manifest, { ...options.readiness, timeoutMs: VALIDATE_PROBE_TIMEOUT_MS })));
    }
    return c.json({ valid: check.valid, format, errors: check.errors, warnings } satisfies ManifestValidation);
  });

  return routes;
}
