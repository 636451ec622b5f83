/** One thing wrong with a manifest, and where it stands in the text (1-based; absent when nowhere in particular). */
export interface ManifestIssue {
  /** `[model].model: required with provider, e.g. …`, as `loom manifest check` says it. */
  message: string;
  /** The field, as TOML or JSON writes it (`[model].model`); empty for the document or its syntax. */
  field: string;
  line?: number | undefined;
  column?: number | undefined;
}

/** The answer of `POST /api/manifests/validate`: every error at its line, and the warnings a spawn would give. */
export interface ManifestValidation {
  valid: boolean;
  format: 'toml' | 'json';
  errors: ManifestIssue[];
  /** What `loom agent spawn` would warn about: keys a table header swallowed; for a valid manifest, why it could not run here. */
  warnings: string[];
}
