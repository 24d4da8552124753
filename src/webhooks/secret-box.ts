import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

export const SEALED_PREFIX = 'enc1:';
/** Fixed salt: the key is derived from one operator secret, the same on every replica. */
const KDF_SALT = 'svc-gateway/webhook-endpoint-secrets/v1';

/**
 * AES-256-GCM for endpoint secrets at rest, bound to the row (AAD = endpoint id) so a sealed value
 * cannot be copied onto another endpoint. Without a key, values are stored and read as they are.
 */
export class SecretBox {
  constructor(private readonly key: Buffer | null) {}

  /** scrypt turns any operator passphrase into a 32-byte key (once, at boot). */
  static fromPassphrase(passphrase: string | undefined): SecretBox {
    return new SecretBox(
      passphrase ? scryptSync(passphrase, KDF_SALT, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }) : null,
    );
  }

  /** Whether a stored value is sealed (else it was stored before encryption was turned on). */
  static isSealed(stored: string): boolean {
    return stored.startsWith(SEALED_PREFIX);
  }

  get encrypts(): boolean {
    return this.key !== null;
  }

  seal(plain: string, aad: string): string {
    if (!this.key) return plain;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(aad, 'utf8'));
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${SEALED_PREFIX}${[iv, cipher.getAuthTag(), data].map((b) => b.toString('base64url')).join('.')}`;
  }

  /** A value stored before encryption was turned on is read as it is. */
  open(stored: string, aad: string): string {
    if (!stored.startsWith(SEALED_PREFIX)) return stored;
    if (!this.key) throw new Error('the endpoint secret is encrypted and SVC_SECRET_KEY is not set');
    const [iv, tag, data] = stored
      .slice(SEALED_PREFIX.length)
      .split('.')
      .map((part) => Buffer.from(part, 'base64url'));
    if (!iv || !tag || !data) throw new Error('the stored endpoint secret is malformed');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(aad, 'utf8')).setAuthTag(tag);
      return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('the endpoint secret cannot be decrypted (was SVC_SECRET_KEY changed?)');
    }
  }
}
