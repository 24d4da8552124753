import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/database/typeorm-options';
import { ENTITIES } from './src/entities';

// The TypeORM CLI (npm run migration:*) works against a PostgreSQL server.
const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to run the TypeORM CLI (e.g. postgres://postgres@127.0.0.1:5432/svc).');

export default new DataSource(dataSourceOptions(url, undefined, ENTITIES));
