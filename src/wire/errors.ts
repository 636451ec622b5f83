/** The JSON body of every error Loom's API answers with (the OpenAI-compatible `/v1` routes aside). */
export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}
