import { pathOnly, REDACTED, scrubUrl } from './scrub-url';

describe('scrubUrl', () => {
  const secret = 'sk-svc-0123456789abcdefghijklmnopqrstuvwxyzABCD';

  // every spelling a WHATWG URL parser (the WebSocket upgrade's) reads as api_key or ticket
  it.each([
    `api_key=${secret}`,
    `api%5Fkey=${secret}`,
    `api%5fkey=${secret}`,
    `%61pi_key=${secret}`,
    `%61%70%69%5F%6B%65%79=${secret}`,
    `API_KEY=${secret}`,
    `ticket=${secret}`,
    `tick%65t=${secret}`,
    `api_key=${encodeURIComponent(secret)}`,
  ])('redacts %s', (pair) => {
    for (const url of [`/v1/audio/speech/stream?${pair}`, `/v1/audio/speech/stream?model=x&${pair}&b=2`]) {
      const scrubbed = scrubUrl(url)!;
      expect(scrubbed).not.toContain(secret);
      expect(scrubbed).not.toContain(encodeURIComponent(secret));
      expect(scrubbed).toContain(REDACTED);
    }
  });

  it('matches what the server authenticates with: each spelling above decodes to a credential name', () => {
    for (const name of ['api%5Fkey', '%61pi_key', 'tick%65t']) {
      const params = new URL(`http://h/p?${name}=v`).searchParams;
      expect(params.get('api_key') ?? params.get('ticket')).toBe('v');
    }
  });

  it('keeps other parameters, the path and URLs without a query as they are', () => {
    expect(scrubUrl('/v1/audio/voice_consents?limit=10&after=vc_1')).toBe(
      '/v1/audio/voice_consents?limit=10&after=vc_1',
    );
    expect(scrubUrl('/healthz')).toBe('/healthz');
    expect(scrubUrl('/x?api_key=s&limit=2')).toBe(`/x?api_key=${REDACTED}&limit=2`);
    expect(scrubUrl(undefined)).toBeUndefined();
  });

  it('redacts a name that cannot be decoded when it looks like a credential', () => {
    expect(scrubUrl(`/x?api_key%ZZ=${secret}`)).not.toContain(secret);
  });
});

describe('pathOnly', () => {
  it('drops the query string and fragment', () => {
    expect(pathOnly('/v1/nope?api_key=sk-svc-x')).toBe('/v1/nope');
    expect(pathOnly('/v1/nope#frag')).toBe('/v1/nope');
    expect(pathOnly('/v1/nope')).toBe('/v1/nope');
  });
});
