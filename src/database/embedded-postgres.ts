import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
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

/** The longest Unix socket path the kernel takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;
/** The port number only names the socket file (`.s.PGSQL.<port>`), as libpq and pg expect. */
const SOCKET_PORT = 5432;

/**
 * A directory only this user can enter, for the database's Unix socket: `<dataDir>/run`, or a private
 * temporary directory when that path is too long for a socket.
 */
function privateSocketDir(dataDir: string): { dir: string; temporary: boolean } {
  const inData = join(dataDir, 'run');
  if (join(inData, `.s.PGSQL.${SOCKET_PORT}`).length <= MAX_SOCKET_PATH) {
    mkdirSync(inData, { recursive: true, mode: 0o700 });
    chmodSync(inData, 0o700); // an existing directory may have been made with looser rights
    return { dir: inData, temporary: false };
  }
  return { dir: mkdtempSync(join(tmpdir(), 'svc-pg-')), temporary: true };
}

/**
 * PostgreSQL without a server: PGlite (Postgres compiled to WebAssembly) keeps its files in
 * `dataDir` and is served over the wire protocol on a Unix socket in a directory only this user can
 * enter (PGlite has no password check, so a loopback port would let every local user in), so TypeORM
 * and pg-boss connect to it like to any PostgreSQL. PGlite is one session: the service uses one connection.
 */
export class EmbeddedPostgres {
  private constructor(
    readonly url: string,
    private readonly dir: string,
    private readonly lockPath: string,
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly socketDir: { dir: string; temporary: boolean },
  ) {}

  static async start(dataDir: string): Promise<EmbeddedPostgres> {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    const lockPath = acquireLock(dir);
    heldHere.add(dir);
    let socketDir: { dir: string; temporary: boolean } | null = null;
    try {
      const db = await PGlite.create(join(dir, 'pgdata'));
      socketDir = privateSocketDir(dir);
      const socketPath = join(socketDir.dir, `.s.PGSQL.${SOCKET_PORT}`);
      rmSync(socketPath, { force: true }); // left by a process that died; the lock above says none runs
      const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 8 });
      await server.start();
      const url = `postgres://postgres@localhost:${SOCKET_PORT}/postgres?host=${encodeURIComponent(socketDir.dir)}`;
      return new EmbeddedPostgres(url, dir, lockPath, db, server, socketDir);
    } catch (err) {
      if (socketDir?.temporary) rmSync(socketDir.dir, { recursive: true, force: true });
      heldHere.delete(dir);
      unlinkSync(lockPath);
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    if (this.socketDir.temporary) rmSync(this.socketDir.dir, { recursive: true, force: true });
    heldHere.delete(this.dir);
    try {
      unlinkSync(this.lockPath);
    } catch {
      // already gone: nothing to release
    }
  }
}
