import { tracingSettings } from './tracing-settings';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('tracingSettings (decisions §12)', () => {
  it('is off without an OTLP endpoint, or with an empty one', () => {
    expect(tracingSettings({})).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBeNull();
  });

  it('is on with either endpoint, in protobuf unless told JSON', () => {
    expect(tracingSettings(ENDPOINT)).toEqual({ protocol: 'http/protobuf' });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      protocol: 'http/protobuf',
    });
    expect(tracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual({
      protocol: 'http/json',
    });
    // the signal's own variable wins over the general one
    expect(
      tracingSettings({
        ...ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }),
    ).toEqual({ protocol: 'http/json' });
  });

  it('is off when the SDK is disabled or the exporter is none, though an endpoint is set', () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('refuses what it cannot honour, naming the variable', () => {
    expect(() => tracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      "OTEL_EXPORTER_OTLP_PROTOCOL 'grpc' is not supported: use http/protobuf or http/json",
    );
    expect(() => tracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(() => tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() =>
      tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '5' }),
    ).toThrow("OTEL_TRACES_SAMPLER_ARG '5' is not a ratio between 0 and 1");
    expect(
      tracingSettings({
        ...ENDPOINT,
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.01',
      }),
    ).toEqual({ protocol: 'http/protobuf' });
  });
});
