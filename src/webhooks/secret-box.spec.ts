import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const box = SecretBox.fromPassphrase('correct horse battery staple');

  it('stores an encrypted value that opens to the secret, different every time', () => {
    const a = box.seal('whsec_abc', 'we_1');
    const b = box.seal('whsec_abc', 'we_1');
    expect(a).toMatch(/^enc1:/);
    expect(a).not.toContain('whsec_abc');
    expect(a).not.toBe(b);
    expect(box.open(a, 'we_1')).toBe('whsec_abc');
  });

  it('refuses a value moved to another endpoint, tampered with, or opened with another key', () => {
    const sealed = box.seal('whsec_abc', 'we_1');
    expect(() => box.open(sealed, 'we_2')).toThrow(/cannot be decrypted/);
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => box.open(tampered, 'we_1')).toThrow();
    expect(() => SecretBox.fromPassphrase('another passphrase').open(sealed, 'we_1')).toThrow(/cannot be decrypted/);
  });

  it('keeps values plain without a key, and still reads plain values once a key is set', () => {
    const plain = SecretBox.fromPassphrase(undefined);
    expect(plain.encrypts).toBe(false);
    expect(plain.seal('whsec_abc', 'we_1')).toBe('whsec_abc');
    expect(box.open('whsec_old', 'we_1')).toBe('whsec_old');
    expect(() => plain.open(box.seal('whsec_abc', 'we_1'), 'we_1')).toThrow(/SVC_SECRET_KEY is not set/);
  });
});
