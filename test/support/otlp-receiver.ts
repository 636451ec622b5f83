import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the OTLP/HTTP JSON export carries it, its attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  kind: number;
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, string | number | boolean>;
}

/** A local OTLP/HTTP receiver on 127.0.0.1: the spans it was sent, and each request's method, path and content type. */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  paths: string[];
  close(): Promise<void>;
}

/** Starts an OTLP/HTTP (JSON) receiver on 127.0.0.1: what an OpenTelemetry collector would be given. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const paths: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      paths.push(`${request.method ?? ''} ${request.url ?? ''} ${request.headers['content-type'] ?? ''}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      for (const resource of body.resourceSpans) {
        for (const scope of resource.scopeSpans) {
          for (const span of scope.spans) {
            const attributes: ReceivedSpan['attributes'] = {};
            for (const { key, value } of (span['attributes'] ?? []) as { key: string; value: Record<string, unknown> }[]) {
              const inner = value['stringValue'] ?? value['intValue'] ?? value['doubleValue'] ?? value['boolValue'];
              attributes[key] = 'intValue' in value ? Number(inner) : (inner as string | number | boolean);
            }
            const text = (key: string): string => (typeof span[key] === 'string' ? span[key] : '');
            const status = (span['status'] ?? {}) as { code?: number };
            spans.push({
              traceId: text('traceId'),
              spanId: text('spanId'),
              parentSpanId: text('parentSpanId'),
              name: text('name'),
              kind: Number(span['kind'] ?? 0),
              status: status.code ?? 0,
              attributes,
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
