import { Hono } from 'hono';
import { checkManifestText, detectManifestFormat, type ManifestFormat, type ManifestIssue } from '../manifest/index.ts';
import { type ModelReadinessOptions, modelWarnings } from '../models/index.ts';
import { refusalOf } from '../kernel/index.ts';
import { type HttpEnv, principalOf } from './http-context.ts';
import { HttpRequestError } from './http-request-error.ts';
import { manifestFormatOf, mediaTypeOf } from './request-input.ts';

/** How long a validation waits for the manifest's model server before warning it does not answer. */
const VALIDATE_PROBE_TIMEOUT_MS = 500;

/** Media types a manifest may also come as, its format then told by its first character. */
const UNTYPED_MEDIA_TYPES: ReadonlySet<string> = new Set(['text/plain', '']);

/** The answer of `POST /api/manifests/validate`. */
export interface ManifestValidation {
  valid: boolean;
  format: ManifestFormat;
  /** Every issue, each with the line and column it is about (1-based), in the order of the text. */
  errors: ManifestIssue[];
  /** What `loom agent spawn` would warn about: keys a table header swallowed; for a valid manifest, why it could not run here. */
  warnings: string[];
}

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
    const body: ManifestValidation = { valid: check.valid, format, errors: check.errors, warnings };
    return c.json(body);
  });

  return routes;
}
