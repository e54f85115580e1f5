import { ConfigError, type Env } from './env.js';

/** DESIGN §13: whether this process exports traces, and as which service. */
export interface TracingConfig {
  /** The Node SDK starts (and is loaded at all) only when true. */
  enabled: boolean;
  /** `OTEL_SERVICE_NAME`. @default 'taskhandle' */
  serviceName: string;
}

/** The OTLP encodings DESIGN §13 names; the SDK's default is the first. */
const PROTOCOLS = ['http/protobuf', 'http/json'];

const set = (value: string | undefined) => value !== undefined && value.trim() !== '';

/**
 * Whether the environment asks for traces, after the OpenTelemetry environment conventions:
 * an OTLP endpoint or a traces exporter other than `none`, unless `OTEL_SDK_DISABLED=true`.
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
 * The OTEL_* variables the server decides on. The SDK reads the rest itself (exporter,
 * endpoint, headers, sampler, propagators, the batch processor's `OTEL_BSP_*`).
 */
export function tracingConfig(env: Env): TracingConfig {
  const enabled = tracingWanted(env);
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
    const protocol = env[name]?.trim();
    if (enabled && protocol && !PROTOCOLS.includes(protocol))
      throw new ConfigError(
        name,
        `expected ${PROTOCOLS.join(' or ')}, got ${JSON.stringify(protocol)}`,
      );
  }
  return { enabled, serviceName: env.OTEL_SERVICE_NAME?.trim() || 'taskhandle' };
}
