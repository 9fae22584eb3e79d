import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import SQLite from 'better-sqlite3';
import type PgModule from 'pg';
import { Kysely, Migrator, PostgresDialect, type Migration } from 'kysely';
import { PARLEY_VERSION } from '../version.js';
import { TAR_END, TarFormatError, readTar, tarHeader, tarPadding, type TarEntrySink } from '../lib/tar.js';
import { migrations } from './migrations/index.js';
import { parseDatabaseUrl, pgModule, type Dialect } from './index.js';

/**
 * `parley backup` and `parley restore`: one gzip-compressed tar file holding `manifest.json`
 * first, then the data. SQLite: `database.sqlite`, a copy made by SQLite's online backup in a
 * single step (one read transaction, so one consistent state; WAL readers do not block the
 * server's writers). PostgreSQL: `tables/<table>.jsonl`, every table read in one REPEATABLE
 * READ READ ONLY transaction (one snapshot), a row per line as PostgreSQL's row_to_json
 * writes it. Uploaded files live in the database (`stored_files`, docs/uploads.md), so they
 * are in both. The manifest names the schema (applied migrations), counts every table's rows,
 * digests the uploads and checksums every entry; restore checks all of it before it commits.
 */

export const BACKUP_FORMAT = 'parley-backup';
export const BACKUP_FORMAT_VERSION = 1;
const MANIFEST = 'manifest.json';
const SQLITE_ENTRY = 'database.sqlite';
/** Kysely's own bookkeeping: the manifest's `migrations` carries it, and restore's migrator writes it. */
const MIGRATION_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  parley_version: string;
  dialect: Dialect;
  created_at: string;
  /** Names of the applied migrations, sorted. */
  migrations: string[];
  /** Rows per table at the moment of the snapshot. */
  tables: Record<string, number>;
  /** The uploaded files (stored_files): how many, their bytes, and a digest of every path and content. */
  uploads: { files: number; bytes: number; sha256: string };
  /** PostgreSQL: each sequence's last value, set again on restore. */
  sequences?: Record<string, number>;
  /** Every entry after the manifest, with its size and SHA-256. */
  entries: Record<string, { bytes: number; sha256: string }>;
}

/** A refusal: the message says what is wrong and what to do. */
export class BackupError extends Error {}

type PgClient = InstanceType<typeof PgModule.Client>;

/** The uploads summary: SHA-256 over "path\tsha256(content)\n" lines in byte order of the paths. */
function uploadsSummary(files: { path: string; sha256: string; bytes: number }[]): BackupManifest['uploads'] {
  files.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const digest = createHash('sha256');
  let bytes = 0;
  for (const f of files) {
    digest.update(`${f.path}\t${f.sha256}\n`);
    bytes += f.bytes;
  }
  return { files: files.length, bytes, sha256: digest.digest('hex') };
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** What restore compares with the manifest: schema, row counts, uploads. */
interface Contents {
  migrations: string[];
  tables: Record<string, number>;
  uploads: BackupManifest['uploads'];
}

function sqliteContents(sqlite: SQLite.Database): Contents {
  const names = sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")
    .pluck()
    .all() as string[];
  const tables: Record<string, number> = {};
  for (const name of names) tables[name] = sqlite.prepare(`SELECT count(*) FROM ${quote(name)}`).pluck().get() as number;
  const migrationNames = names.includes('kysely_migration') ? (sqlite.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all() as string[]) : [];
  const files: { path: string; sha256: string; bytes: number }[] = [];
  if (names.includes('stored_files')) {
    for (const row of sqlite.prepare('SELECT path, data FROM stored_files').iterate() as Iterable<{ path: string; data: Buffer }>) {
      files.push({ path: row.path, sha256: sha256(row.data), bytes: row.data.length });
    }
  }
  return { migrations: migrationNames, tables, uploads: uploadsSummary(files) };
}

async function pgTables(client: PgClient): Promise<string[]> {
  const r = await client.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  return r.rows.map((row) => row.name);
}

/** The columns a dump holds and a restore writes: all but the generated ones (PostgreSQL computes those). */
async function pgColumns(client: PgClient, table: string): Promise<string[]> {
  const r = await client.query<{ name: string }>(
    "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position",
    [table],
  );
  return r.rows.map((row) => row.name);
}

async function pgContents(client: PgClient): Promise<Contents> {
  const names = await pgTables(client);
  const tables: Record<string, number> = {};
  for (const name of names) {
    if (MIGRATION_TABLES.has(name)) continue;
    tables[name] = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quote(name)}`)).rows[0]!.n);
  }
  const migrationNames = names.includes('kysely_migration')
    ? (await client.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name')).rows.map((r) => r.name)
    : [];
  const files = names.includes('stored_files')
    ? (await client.query<{ path: string; sha256: string; bytes: string }>("SELECT path, encode(sha256(data), 'hex') AS sha256, octet_length(data) AS bytes FROM stored_files")).rows.map(
        (r) => ({ path: r.path, sha256: r.sha256, bytes: Number(r.bytes) }),
      )
    : [];
  return { migrations: migrationNames.sort(), tables, uploads: uploadsSummary(files) };
}

async function connectPg(url: string): Promise<PgClient> {
  const client = new (pgModule().Client)({ connectionString: url });
  await client.connect();
  return client;
}

/** Writes a stream of lines to a file, hashing and counting as it goes. */
class EntryFile {
  private readonly out;
  private readonly hash = createHash('sha256');
  bytes = 0;
  constructor(readonly path: string) {
    this.out = createWriteStream(path);
  }
  async write(data: string | Buffer): Promise<void> {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    this.hash.update(buf);
    this.bytes += buf.length;
    if (!this.out.write(buf)) await once(this.out, 'drain');
  }
  async close(): Promise<{ bytes: number; sha256: string }> {
    this.out.end();
    await once(this.out, 'close');
    return { bytes: this.bytes, sha256: this.hash.digest('hex') };
  }
}

async function hashFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return { bytes: statSync(path).size, sha256: hash.digest('hex') };
}

/**
 * Backs up the database at `databaseUrl` to the file `to` (written as `to.partial`, renamed
 * when complete, so `to` is never a truncated backup). Safe while servers run on it.
 */
export async function createBackup(databaseUrl: string, to: string): Promise<BackupManifest> {
  const { dialect, target } = parseDatabaseUrl(databaseUrl);
  const dest = resolve(to);
  if (!existsSync(dirname(dest))) throw new BackupError(`Directory ${dirname(dest)} does not exist`);
  const work = mkdtempSync(join(dirname(dest), `.${basename(dest)}-`));
  try {
    const entries: { name: string; path: string }[] = [];
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      parley_version: PARLEY_VERSION,
      dialect,
      created_at: new Date().toISOString(),
      migrations: [],
      tables: {},
      uploads: { files: 0, bytes: 0, sha256: '' },
      entries: {},
    };
    if (dialect === 'sqlite') {
      if (!existsSync(target)) throw new BackupError(`No database at ${target}`);
      const copy = join(work, SQLITE_ENTRY);
      const source = new SQLite(target, { readonly: true, fileMustExist: true });
      try {
        // Every page in one step: one read transaction, hence one consistent state even while
        // another process writes (a write between steps would restart a stepped backup).
        await source.backup(copy, { progress: () => 0x7fffffff });
      } finally {
        source.close();
      }
      const snapshot = new SQLite(copy, { readonly: true });
      try {
        Object.assign(manifest, sqliteContents(snapshot));
      } finally {
        snapshot.close();
      }
      manifest.entries[SQLITE_ENTRY] = await hashFile(copy);
      entries.push({ name: SQLITE_ENTRY, path: copy });
    } else {
      const client = await connectPg(target);
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        Object.assign(manifest, await pgContents(client));
        for (const table of await pgTables(client)) {
          if (MIGRATION_TABLES.has(table)) continue;
          const columns = (await pgColumns(client, table)).map(quote).join(', ');
          const name = `tables/${table}.jsonl`;
          const file = new EntryFile(join(work, `${table}.jsonl`));
          await client.query(`DECLARE dump NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS j FROM (SELECT ${columns} FROM ${quote(table)}) t`);
          for (;;) {
            const batch = await client.query<{ j: string }>('FETCH 1000 FROM dump');
            if (batch.rows.length === 0) break;
            await file.write(`${batch.rows.map((r) => r.j).join('\n')}\n`);
          }
          await client.query('CLOSE dump');
          manifest.entries[name] = await file.close();
          entries.push({ name, path: file.path });
        }
        const sequences = await client.query<{ name: string; value: string | null }>(
          'SELECT sequencename AS name, last_value AS value FROM pg_sequences WHERE schemaname = current_schema() ORDER BY sequencename',
        );
        manifest.sequences = Object.fromEntries(sequences.rows.filter((r) => r.value !== null).map((r) => [r.name, Number(r.value)]));
        await client.query('COMMIT');
      } finally {
        await client.end();
      }
    }
    if (manifest.migrations.length === 0) throw new BackupError('The database has no Parley schema: nothing to back up');
    const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    const mtime = Date.now() / 1000;
    async function* archive(): AsyncGenerator<Buffer> {
      yield tarHeader(MANIFEST, manifestBytes.length, mtime);
      yield manifestBytes;
      yield tarPadding(manifestBytes.length);
      for (const entry of entries) {
        const { bytes } = manifest.entries[entry.name]!;
        yield tarHeader(entry.name, bytes, mtime);
        for await (const chunk of createReadStream(entry.path)) yield chunk as Buffer;
        yield tarPadding(bytes);
      }
      yield TAR_END;
    }
    const partial = `${dest}.partial`;
    await pipeline(archive, createGzip(), createWriteStream(partial));
    renameSync(partial, dest);
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Refuses a manifest this version cannot restore, before any data is read. */
function checkManifest(manifest: BackupManifest, dialect: Dialect): void {
  if (manifest?.format !== BACKUP_FORMAT) throw new BackupError('Not a Parley backup: its manifest.json is not a Parley manifest');
  if (manifest.format_version > BACKUP_FORMAT_VERSION) {
    throw new BackupError(`The backup was written by Parley ${manifest.parley_version} in a newer backup format (${manifest.format_version}); upgrade Parley to restore it`);
  }
  const unknown = manifest.migrations.filter((name) => !(name in migrations));
  if (unknown.length > 0) {
    throw new BackupError(
      `The backup's schema is newer than this Parley (${PARLEY_VERSION}): it has migrations this version does not know (${unknown.join(', ')}); restore it with Parley ${manifest.parley_version} or newer`,
    );
  }
  if (manifest.dialect !== dialect) {
    throw new BackupError(`The backup is of a ${manifest.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} database; set DATABASE_URL to an empty ${manifest.dialect === 'sqlite' ? 'sqlite:PATH' : 'postgres:// database'} to restore it`);
  }
}

function compareContents(manifest: BackupManifest, found: Contents): void {
  const damaged = (what: string): BackupError => new BackupError(`The backup file is damaged: ${what} does not match its manifest`);
  if (found.migrations.join() !== [...manifest.migrations].sort().join()) throw damaged('the schema');
  for (const [table, rows] of Object.entries(manifest.tables)) {
    if (found.tables[table] !== rows) throw damaged(`the number of rows of ${table} (${found.tables[table] ?? 'missing'}, expected ${rows})`);
  }
  if (found.uploads.files !== manifest.uploads.files || found.uploads.sha256 !== manifest.uploads.sha256) throw damaged('the uploaded files');
}

/** Hashes an entry while passing it on, and checks it against the manifest at its end. */
function checkedSink(manifest: BackupManifest, name: string, size: number, inner: TarEntrySink): TarEntrySink {
  const expected = manifest.entries[name];
  if (!expected) throw new BackupError(`The backup file is damaged: it holds ${name}, which its manifest does not name`);
  if (expected.bytes !== size) throw new BackupError(`The backup file is damaged: ${name} has ${size} bytes, its manifest says ${expected.bytes}`);
  const hash = createHash('sha256');
  return {
    write: (chunk) => {
      hash.update(chunk);
      return inner.write(chunk);
    },
    end: async () => {
      await inner.end();
      if (hash.digest('hex') !== expected.sha256) throw new BackupError(`The backup file is damaged: the checksum of ${name} does not match its manifest`);
    },
  };
}

/**
 * Reads the archive at `file`: the manifest first (checked by `onManifest` before any data
 * is read), then every other entry through `onEntry`. A gzip or tar error, a missing entry
 * or a checksum mismatch is reported as a damaged file.
 */
async function readBackup(
  file: string,
  onManifest: (manifest: BackupManifest) => void | Promise<void>,
  onEntry: (name: string, size: number) => TarEntrySink,
): Promise<BackupManifest> {
  if (!existsSync(file)) throw new BackupError(`No file ${file}`);
  let manifest: BackupManifest | null = null;
  const seen = new Set<string>();
  const source = createReadStream(file).pipe(createGunzip());
  try {
    await readTar(source, ({ name, size }) => {
      if (!manifest) {
        if (name !== MANIFEST) throw new BackupError('Not a Parley backup: it does not begin with manifest.json');
        if (size > 64 * 1024 * 1024) throw new BackupError('Not a Parley backup: its manifest.json is too large');
        const parts: Buffer[] = [];
        return {
          write: (chunk) => void parts.push(chunk),
          end: async () => {
            let parsed: BackupManifest;
            try {
              parsed = JSON.parse(Buffer.concat(parts).toString('utf8')) as BackupManifest;
            } catch {
              throw new BackupError('Not a Parley backup: its manifest.json is not JSON');
            }
            await onManifest(parsed);
            manifest = parsed;
          },
        };
      }
      seen.add(name);
      return checkedSink(manifest, name, size, onEntry(name, size));
    });
  } catch (e) {
    source.destroy();
    if (e instanceof BackupError) throw e;
    if (e instanceof TarFormatError || (e as NodeJS.ErrnoException).code?.startsWith('Z_')) {
      throw new BackupError(`The backup file is damaged or truncated (${(e as Error).message}); it cannot be restored`);
    }
    throw e;
  }
  if (!manifest) throw new BackupError('Not a Parley backup: it holds no manifest.json');
  const missing = Object.keys((manifest as BackupManifest).entries).filter((name) => !seen.has(name));
  if (missing.length > 0) throw new BackupError(`The backup file is damaged: ${missing.join(', ')} missing`);
  return manifest;
}

/**
 * Restores the backup `file` into the empty database at `databaseUrl`: the schema as it was
 * (then the newer migrations of this version at the next start or CLI command), every row,
 * sequence positions, all checked against the manifest before it is committed. The restored
 * database gets a new identity (db/identity.ts): event queues and Redis state of the backed-up
 * database are not its own, so clients register again.
 */
export async function restoreBackup(databaseUrl: string, file: string): Promise<BackupManifest> {
  const { dialect, target } = parseDatabaseUrl(databaseUrl);
  return dialect === 'sqlite' ? restoreSqlite(target, resolve(file)) : restorePostgres(target, resolve(file));
}

async function restoreSqlite(target: string, file: string): Promise<BackupManifest> {
  if (target === ':memory:' || target === '') throw new BackupError('Restore needs a database file: set DATABASE_URL to sqlite:PATH');
  if (existsSync(target)) {
    const existing = new SQLite(target, { readonly: true });
    try {
      const n = existing.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get() as number;
      if (n > 0) throw new BackupError(`The database ${target} is not empty: restore only into a new database (move it away or point DATABASE_URL elsewhere)`);
    } finally {
      existing.close();
    }
  }
  if (!existsSync(dirname(target))) throw new BackupError(`Directory ${dirname(target)} does not exist`);
  const work = mkdtempSync(join(dirname(target), `.${basename(target)}-restore-`));
  try {
    const copy = join(work, SQLITE_ENTRY);
    const manifest = await readBackup(
      file,
      (m) => checkManifest(m, 'sqlite'),
      (name) => {
        if (name !== SQLITE_ENTRY) throw new BackupError(`The backup file is damaged: unexpected entry ${name}`);
        const out = createWriteStream(copy);
        return {
          write: async (chunk) => {
            if (!out.write(chunk)) await once(out, 'drain');
          },
          end: async () => {
            out.end();
            await once(out, 'close');
          },
        };
      },
    );
    const restored = new SQLite(copy);
    try {
      const check = restored.prepare('PRAGMA integrity_check').pluck().all() as string[];
      if (check.join() !== 'ok') throw new BackupError(`The backup file is damaged: SQLite's integrity check failed (${check.slice(0, 3).join('; ')})`);
      compareContents(manifest, sqliteContents(restored));
      restored.prepare("DELETE FROM server_secrets WHERE name = 'database_id'").run();
      restored.pragma('journal_mode = WAL');
    } finally {
      restored.close();
    }
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    renameSync(copy, target);
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function restorePostgres(url: string, file: string): Promise<BackupManifest> {
  const client = await connectPg(url);
  let created = false;
  try {
    if ((await pgTables(client)).length > 0) {
      throw new BackupError('The PostgreSQL database is not empty: restore only into a new database (createdb, then point DATABASE_URL at it)');
    }
    const columns = new Map<string, string[]>();
    let foreignKeys: { table: string; name: string; def: string }[] = [];
    const manifest = await readBackup(
      file,
      async (m) => {
        checkManifest(m, 'postgres');
        created = true;
        await migrateTo(url, m.migrations);
        await client.query('BEGIN');
        const tables = (await pgTables(client)).filter((t) => !MIGRATION_TABLES.has(t));
        for (const t of tables) columns.set(t, await pgColumns(client, t));
        // As pg_dump does: rows first, then the foreign keys (checked when added back), no
        // triggers while loading (the rows they would derive are in the backup too).
        foreignKeys = (
          await client.query<{ table: string; name: string; def: string }>(
            "SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
          )
        ).rows;
        for (const fk of foreignKeys) await client.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${quote(fk.name)}`);
        if (tables.length > 0) await client.query(`TRUNCATE ${tables.map(quote).join(', ')}`);
        for (const t of tables) await client.query(`ALTER TABLE ${quote(t)} DISABLE TRIGGER USER`);
      },
      (name) => {
        const table = /^tables\/(.+)\.jsonl$/.exec(name)?.[1];
        const cols = table ? columns.get(table) : undefined;
        if (!table || !cols) throw new BackupError(`The backup file is damaged: unexpected entry ${name}`);
        const list = cols.map(quote).join(', ');
        const insert = `INSERT INTO ${quote(table)} (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${quote(table)}, $1::json)`;
        let rest = '';
        let batch: string[] = [];
        let batchBytes = 0;
        const flush = async (): Promise<void> => {
          if (batch.length === 0) return;
          const rows = `[${batch.join(',')}]`;
          batch = [];
          batchBytes = 0;
          await client.query(insert, [rows]);
        };
        return {
          write: async (chunk) => {
            const lines = (rest + chunk.toString('utf8')).split('\n');
            rest = lines.pop()!;
            for (const line of lines) {
              batch.push(line);
              batchBytes += line.length;
              if (batch.length >= 1000 || batchBytes >= 8 * 1024 * 1024) await flush();
            }
          },
          end: async () => {
            if (rest !== '') throw new BackupError(`The backup file is damaged: ${name} ends inside a row`);
            await flush();
          },
        };
      },
    );
    for (const t of columns.keys()) await client.query(`ALTER TABLE ${quote(t)} ENABLE TRIGGER USER`);
    for (const [name, value] of Object.entries(manifest.sequences ?? {})) await client.query('SELECT setval($1, $2)', [quote(name), value]);
    for (const fk of foreignKeys) await client.query(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${quote(fk.name)} ${fk.def}`);
    compareContents(manifest, await pgContents(client));
    await client.query("DELETE FROM server_secrets WHERE name = 'database_id'");
    await client.query('COMMIT');
    return manifest;
  } catch (e) {
    if (created) {
      await client.query('ROLLBACK').catch(() => undefined);
      await emptyPostgres(client);
    }
    throw e;
  } finally {
    await client.end();
  }
}

/** Applies exactly the named migrations (the backup's schema) to an empty PostgreSQL database. */
async function migrateTo(url: string, names: string[]): Promise<void> {
  const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new (pgModule().Pool)({ connectionString: url, max: 1 }) }) });
  try {
    const chosen: Record<string, Migration> = {};
    for (const name of names) chosen[name] = { up: (k) => migrations[name]!.up(k, 'postgres') };
    const { error } = await new Migrator({ db: kysely, provider: { getMigrations: async () => chosen }, allowUnorderedMigrations: true }).migrateToLatest();
    if (error) throw error;
  } finally {
    await kysely.destroy();
  }
}

/** Leaves a database that a failed restore had begun to fill as empty as it found it. */
async function emptyPostgres(client: PgClient): Promise<void> {
  for (const t of await pgTables(client)) await client.query(`DROP TABLE IF EXISTS ${quote(t)} CASCADE`);
  const functions = await client.query<{ f: string }>('SELECT oid::regprocedure::text AS f FROM pg_proc WHERE pronamespace = current_schema()::regnamespace');
  for (const { f } of functions.rows) await client.query(`DROP FUNCTION IF EXISTS ${f} CASCADE`);
  const sequences = await client.query<{ s: string }>('SELECT sequencename AS s FROM pg_sequences WHERE schemaname = current_schema()');
  for (const { s } of sequences.rows) await client.query(`DROP SEQUENCE IF EXISTS ${quote(s)} CASCADE`);
}
