import { deliveryBody, SourceEvent } from './payload';

const at = new Date('2025-11-21T00:00:00.123Z');

describe('deliveryBody', () => {
  it('serialises a failover event in the documented field order', () => {
    const event: SourceEvent = {
      id: 'evt_1',
      type: 'failover',
      keyId: 'pk_a',
      provider: 'anthropic',
      createdAt: at,
      data: {
        proxy_key: 'pk_a',
        model: 'gpt-4o',
        exhausted_provider: 'openai',
        active_provider: 'anthropic',
        fallback_level: 1,
        latency_ms: 812,
        request_id: 'req_x',
      },
    };
    expect(deliveryBody(event, { id: 'pk_a', chain: [] })).toBe(
      '{"id":"evt_1","event":"failover","timestamp":"2025-11-21T00:00:00.123Z","data":{"proxy_key":"pk_a","model":"gpt-4o","exhausted_provider":"openai","active_provider":"anthropic","fallback_level":1,"latency_ms":812,"request_id":"req_x"}}',
    );
  });

  it('adds coalesced_count and window_secs after the documented fields on the closing event of a window', () => {
    const event: SourceEvent = {
      id: 'evt_3',
      type: 'failover',
      keyId: 'pk_a',
      provider: 'anthropic',
      createdAt: at,
      data: {
        proxy_key: 'pk_a',
        model: 'gpt-4o',
        exhausted_provider: 'openai',
        active_provider: 'anthropic',
        fallback_level: 1,
        latency_ms: 9,
        request_id: 'req_y',
        coalesced_count: 49,
        window_secs: 60,
      },
    };
    expect(deliveryBody(event, { id: 'pk_a', chain: [] })).toBe(
      '{"id":"evt_3","event":"failover","timestamp":"2025-11-21T00:00:00.123Z","data":{"proxy_key":"pk_a","model":"gpt-4o","exhausted_provider":"openai","active_provider":"anthropic","fallback_level":1,"latency_ms":9,"request_id":"req_y","coalesced_count":49,"window_secs":60}}',
    );
  });

  it('says mid_stream on the failover that continued a broken stream, before the closing fields', () => {
    const event: SourceEvent = {
      id: 'evt_4',
      type: 'failover',
      keyId: 'pk_a',
      provider: 'anthropic',
      createdAt: at,
      data: {
        exhausted_provider: 'openai',
        active_provider: 'anthropic',
        fallback_level: 1,
        latency_ms: 30,
        request_id: 'req_z',
        model: 'gpt-4o',
        mid_stream: true,
        coalesced_count: 2,
        window_secs: 60,
      },
    };
    expect(JSON.parse(deliveryBody(event, { id: 'pk_a', chain: [] })).data).toEqual({
      proxy_key: 'pk_a',
      model: 'gpt-4o',
      exhausted_provider: 'openai',
      active_provider: 'anthropic',
      fallback_level: 1,
      latency_ms: 30,
      request_id: 'req_z',
      mid_stream: true,
      coalesced_count: 2,
      window_secs: 60,
    });
  });

  it("fills a recovery with the receiving key and that key's first model on the recovered provider", () => {
    const event: SourceEvent = {
      id: 'evt_2',
      type: 'provider_recovered',
      keyId: null,
      provider: 'openai',
      createdAt: at,
      data: {
        exhausted_provider: null,
        active_provider: 'openai',
        fallback_level: null,
        latency_ms: 40,
        request_id: 'req_probe',
      },
    };
    const chain = [
      { provider: 'anthropic', model: 'claude' },
      { provider: 'openai', model: 'gpt-5.4-mini' },
      { provider: 'openai', model: 'gpt-4o' },
    ];
    expect(JSON.parse(deliveryBody(event, { id: 'pk_b', chain }))).toEqual({
      id: 'evt_2',
      event: 'provider_recovered',
      timestamp: '2025-11-21T00:00:00.123Z',
      data: {
        proxy_key: 'pk_b',
        model: 'gpt-5.4-mini',
        exhausted_provider: null,
        active_provider: 'openai',
        fallback_level: null,
        latency_ms: 40,
        request_id: 'req_probe',
      },
    });
  });
});
