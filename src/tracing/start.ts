/** The running OpenTelemetry SDK, for its flush on stop. */
export interface Tracing {
  /** Exports what is buffered and stops the SDK. Never rejects. */
  shutdown(): Promise<void>;
}

/** The service name spans carry when `OTEL_SERVICE_NAME` is not set. */
export const DEFAULT_SERVICE_NAME = 'taskhandle';

type Env = Readonly<Record<string, string | undefined>>;

const set = (value: string | undefined) => value !== undefined && value.trim() !== '';

/**
 * Whether the environment asks for traces (DESIGN §13, after the OpenTelemetry environment
 * conventions): an OTLP endpoint or a traces exporter other than `none`, unless
 * `OTEL_SDK_DISABLED=true`.
 */
export function tracingWanted(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (exporters.length > 0) return !exporters.every((name) => name === 'none');
  return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the OpenTelemetry Node SDK when the environment asks for traces, and does nothing
 * (loads nothing) otherwise. The SDK reads the standard variables itself: the exporter
 * (`OTEL_TRACES_EXPORTER`, default `otlp`), its protocol (`OTEL_EXPORTER_OTLP_PROTOCOL`,
 * `http/protobuf` or `http/json`) and endpoint, the sampler, the propagators and the batch
 * processor's `OTEL_BSP_*`. Traces only: metrics stay on `/metrics`, logs on stdout. A
 * handler's `fetch` and `pg` calls become spans of their own under its attempt.
 */
export async function startTracing(env: Env = process.env): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const [{ NodeSDK }, { UndiciInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-undici'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
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
    shutdown: () => sdk.shutdown().catch(() => {}),
  };
}
