import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/typeorm-options';
import { adminQuery, baseDatabaseUrl, withDatabase } from './database';

/** A fresh database for this run, migrated once; every e2e file boots the app against it. */
export default async function globalSetup(): Promise<void> {
  const base = baseDatabaseUrl();
  const name = `svc_test_${Date.now()}_${process.pid}`;
  await adminQuery(base, `CREATE DATABASE "${name}"`);
  const url = withDatabase(base, name);
  const dataSource = new DataSource(dataSourceOptions(url, { poolSize: 1 }));
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
  process.env.SVC_TEST_BASE_DATABASE_URL = base;
  process.env.SVC_TEST_DATABASE = name;
  process.env.DATABASE_URL = url;
  // with a PostgreSQL server the service refuses to store webhook secrets unencrypted unless told to
  process.env.SVC_SECRET_KEY ??= 'test-run-webhook-secret-key-0123456789';
}
