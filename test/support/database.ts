import { Client } from 'pg';

/** PostgreSQL the tests use: DATABASE_URL, or the local server a development machine has. */
export const baseDatabaseUrl = (): string => process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
