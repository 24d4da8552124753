import { createHmac, timingSafeEqual } from 'node:crypto';
import { deliveryHeaders, signDelivery } from './signature';

describe('signDelivery', () => {
  it('matches a digest computed independently (openssl dgst -sha256 -hmac)', () => {
    // printf '%s' '1763683200.{"id":"evt_1","event":"failover"}' | openssl dgst -sha256 -hmac whsec_test
    expect(signDelivery('whsec_test', 1763683200, '{"id":"evt_1","event":"failover"}')).toBe(
      'sha256=e2c76734ea4cfd11b12033b6cb9048f66d1fd2ee2db8096b35efd460f4cb21e9',
    );
  });

  it('changes with the timestamp, the secret and any byte of the body', () => {
    const base = signDelivery('whsec_a', 100, '{"a":1}');
    expect(signDelivery('whsec_a', 101, '{"a":1}')).not.toBe(base);
    expect(signDelivery('whsec_b', 100, '{"a":1}')).not.toBe(base);
    expect(signDelivery('whsec_a', 100, '{"a": 1}')).not.toBe(base);
  });

  it('signs multi-byte UTF-8 bodies over their bytes', () => {
    const body = '{"model":"modèle-😀"}';
    const expected = createHmac('sha256', Buffer.from('whsec_x', 'utf8'))
      .update(Buffer.from(`7.${body}`, 'utf8'))
      .digest('hex');
    expect(signDelivery('whsec_x', 7, body)).toBe(`sha256=${expected}`);
  });
});

describe('deliveryHeaders', () => {
  it('sends the event, the unix-seconds timestamp and a signature a receiver can verify', () => {
    const body = '{"id":"evt_2"}';
    const headers = deliveryHeaders('whsec_k', 'provider_recovered', body, 1763683200999);
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'x-svc-event': 'provider_recovered',
      'x-svc-timestamp': '1763683200',
    });
    const expected = Buffer.from(createHmac('sha256', 'whsec_k').update(`1763683200.${body}`).digest('hex'));
    const got = Buffer.from(headers['x-svc-signature'].replace(/^sha256=/, ''));
    expect(got.length === expected.length && timingSafeEqual(got, expected)).toBe(true);
  });
});
