import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Data directories this process holds, so a lock file with our own pid is told apart from a stale one. */
const heldHere = new Set<string>();

export class DataDirInUseError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes `<dir>/svc.lock` exclusively; a lock left by a dead process is taken over. */
function acquireLock(dir: string): string {
  const lockPath = join(dir, 'svc.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return lockPath;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
      const held = pid === process.pid ? heldHere.has(dir) : Number.isInteger(pid) && isAlive(pid);
      if (held) {
        throw new DataDirInUseError(
          `The embedded database in ${dir} is in use by another process (pid ${pid}). ` +
            'Stop that process, set SVC_DATA_DIR to another directory, or set DATABASE_URL to a PostgreSQL server.',
        );
      }
      unlinkSync(lockPath);
    }
  }
  throw new DataDirInUseError(`Could not lock the embedded database in ${dir}.`);
}

/**
 * PostgreSQL without a server: PGlite (Postgres compiled to WebAssembly) keeps its files in
 * `dataDir` and is served over the wire protocol on a loopback port, so TypeORM and pg-boss
 * connect to it like to any PostgreSQL. PGlite is one session: the service uses one connection.
 */
export class EmbeddedPostgres {
  private constructor(
    readonly url: string,
    private readonly dir: string,
    private readonly lockPath: string,
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
  ) {}

  static async start(dataDir: string): Promise<EmbeddedPostgres> {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    const lockPath = acquireLock(dir);
    heldHere.add(dir);
    try {
      const db = await PGlite.create(join(dir, 'pgdata'));
      const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
      await server.start();
      const address = server.getServerConn();
      return new EmbeddedPostgres(`postgres://postgres@${address}/postgres`, dir, lockPath, db, server);
    } catch (err) {
      heldHere.delete(dir);
      unlinkSync(lockPath);
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    heldHere.delete(this.dir);
    try {
      unlinkSync(this.lockPath);
    } catch {
      // already gone: nothing to release
    }
  }
}
