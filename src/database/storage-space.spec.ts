import { tmpdir } from 'node:os';
import { DomainError } from '../common/errors/domain-error';
import { validateEnvironment } from '../config/env.schema';
import type { DatabaseEndpoint } from './database-endpoint';
import type { DatabaseStatus } from './database-status';
import { StorageSpace } from './storage-space';

/** A guard over a database of `size()` bytes, embedded or not, with the given settings. */
function guard(settings: Record<string, string>, options: { embedded: boolean; size: () => Promise<number> }) {
  const env = validateEnvironment({ SVC_DATA_DIR: tmpdir(), ...settings });
  const endpoint = { isEmbedded: options.embedded } as DatabaseEndpoint;
  const status = { databaseBytes: options.size } as DatabaseStatus;
  return new StorageSpace(env, endpoint, status);
}

const refusal = (space: StorageSpace): DomainError | null => {
  try {
    space.assertRoom();
    return null;
  } catch (err) {
    return err as DomainError;
  }
};

describe('StorageSpace (the free-space guard)', () => {
  it('refuses with 507 insufficient_storage once the database reaches its budget, and lets writes through under it', async () => {
    let size = 900;
    const space = guard({ SVC_STORAGE_BUDGET_BYTES: '1000' }, { embedded: false, size: () => Promise.resolve(size) });
    await space.sample();
    expect(refusal(space)).toBeNull();
    size = 1000;
    await space.sample();
    expect(refusal(space)).toMatchObject({ status: 507, code: 'insufficient_storage', type: 'api_error' });
    expect(refusal(space)?.message).toMatch(/1000 bytes, its budget SVC_STORAGE_BUDGET_BYTES is 1000/);
  });

  it("measures an embedded database's free disk space against SVC_STORAGE_MIN_FREE_BYTES", async () => {
    const size = jest.fn(() => Promise.resolve(0));
    const short = guard({ SVC_STORAGE_MIN_FREE_BYTES: String(Number.MAX_SAFE_INTEGER) }, { embedded: true, size });
    await short.sample();
    expect(refusal(short)?.message).toMatch(/bytes free for the database, SVC_STORAGE_MIN_FREE_BYTES is/);
    const roomy = guard({ SVC_STORAGE_MIN_FREE_BYTES: '1' }, { embedded: true, size });
    await roomy.sample();
    expect(refusal(roomy)).toBeNull();
    // no budget set: the database's size is never asked for
    expect(size).not.toHaveBeenCalled();
  });

  it("never reads an external database's disk, and with no budget refuses nothing", async () => {
    const space = guard(
      { SVC_STORAGE_MIN_FREE_BYTES: String(Number.MAX_SAFE_INTEGER) },
      { embedded: false, size: () => Promise.reject(new Error('not asked')) },
    );
    await space.sample();
    expect(refusal(space)).toBeNull();
  });

  it('keeps the last verdict when a sample fails', async () => {
    let answer: () => Promise<number> = () => Promise.resolve(5000);
    const space = guard({ SVC_STORAGE_BUDGET_BYTES: '1000' }, { embedded: false, size: () => answer() });
    await space.sample();
    expect(refusal(space)).not.toBeNull();
    answer = () => Promise.reject(new Error('statement timeout'));
    await space.sample();
    expect(refusal(space)).not.toBeNull();
  });
});
