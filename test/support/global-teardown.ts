import { adminQuery } from './database';

export default async function globalTeardown(): Promise<void> {
  const base = process.env.SVC_TEST_BASE_DATABASE_URL;
  const name = process.env.SVC_TEST_DATABASE;
  if (base && name) await adminQuery(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
