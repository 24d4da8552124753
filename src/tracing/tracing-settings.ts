/** The OTLP encodings the gateway exports traces in (decisions §12); `grpc` is not one of them. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** OTEL_TRACES_SAMPLER's values as the SDK knows them (it reads the variable itself, and OTEL_TRACES_SAMPLER_ARG). */
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
const RATIO_SAMPLERS = ['traceidratio', 'parentbased_traceidratio'];

/** What the gateway decides itself from the OTEL_* variables; everything else (endpoint, headers, timeout, sampler, resource) the SDK reads. */
export interface TracingSettings {
  protocol: OtlpProtocol;
}

/** An OTEL_* variable that the SDK would only warn about: the boot fails with this message instead. */
export class TracingSettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TracingSettingsError';
  }
}

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/**
 * Traces are on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and
 * neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise; null: off. Throws on a value the
 * gateway cannot honour (a protocol other than the two HTTP ones, an unknown sampler, a ratio outside 0..1).
 */
export function tracingSettings(env: Record<string, string | undefined>): TracingSettings | null {
  if (!set(env.OTEL_EXPORTER_OTLP_ENDPOINT) && !set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) return null;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return null;
  if (set(exporter) && exporter !== 'otlp')
    throw new TracingSettingsError(`OTEL_TRACES_EXPORTER '${exporter}' is not supported: use otlp (or none for off)`);
  const protocolVariable = set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolVariable]?.trim() || 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol))
    throw new TracingSettingsError(
      `${protocolVariable} '${protocol}' is not supported: use ${OTLP_PROTOCOLS.join(' or ')}`,
    );
  checkSampler(env);
  return { protocol: protocol as OtlpProtocol };
}

function checkSampler(env: Record<string, string | undefined>): void {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim();
  if (!set(sampler)) return;
  if (!SAMPLERS.includes(sampler))
    throw new TracingSettingsError(`OTEL_TRACES_SAMPLER '${sampler}' is not one of ${SAMPLERS.join(', ')}`);
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  if (!RATIO_SAMPLERS.includes(sampler) || !set(arg)) return;
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw new TracingSettingsError(`OTEL_TRACES_SAMPLER_ARG '${arg}' is not a ratio between 0 and 1`);
}
