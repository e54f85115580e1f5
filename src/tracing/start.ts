import type { TracingConfig } from '../config/tracing.js';

/** The longest a stop waits for the last spans to be exported. */
const SHUTDOWN_MS = 5_000;

/** The running OpenTelemetry SDK, for its flush on stop. */
export interface Tracing {
  /** Exports what is buffered (for up to 5 s) and stops the SDK. Never rejects. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK when the environment asks for traces (`config.enabled`,
 * config/tracing.ts), and does nothing (loads nothing) otherwise. The SDK reads the standard
 * variables itself: the exporter (`OTEL_TRACES_EXPORTER`, default `otlp`), its protocol
 * (`OTEL_EXPORTER_OTLP_PROTOCOL`, `http/protobuf` or `http/json`) and endpoint, the sampler,
 * the propagators and the batch processor's `OTEL_BSP_*`. Traces only: metrics stay on `/metrics`, logs on stdout. A
 * handler's `fetch` and `pg` calls become spans of their own under its attempt.
 */
export async function startTracing(config: TracingConfig): Promise<Tracing | undefined> {
  if (!config.enabled) return undefined;
  const [{ NodeSDK }, { UndiciInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-undici'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      // Only the calls made under a traced request or attempt: the claim and event loops'
      // own statements would be a trace each, several a second.
      new UndiciInstrumentation({ requireParentforSpans: true }),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return {
    // A collector that does not answer holds a stop back at most this long.
    shutdown: () =>
      Promise.race([
        sdk.shutdown().catch(() => {}),
        new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_MS).unref()),
      ]),
  };
}
