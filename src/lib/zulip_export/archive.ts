import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createGunzip, gzipSync } from 'node:zlib';
import { TAR_END, readTar, tarHeader, tarPadding } from '../tar.js';

/** A row of one of Zulip's tables as its export writes it (model_to_dict, dates as float seconds). */
export type Rec = Record<string, unknown>;

/**
 * A data export in Zulip's layout (zerver/lib/export.py), held in memory:
 * - `realm.json`: every table of the organization but messages and attachments;
 * - `messages-000001.json`, ...: `zerver_message` and `zerver_usermessage`, 1000 messages a file;
 * - `attachment.json`: `zerver_attachment` (each with the IDs of its `messages`);
 * - `uploads/`, `avatars/`, `emoji/`, `realm_icons/`: the files, each directory with a
 *   `records.json` describing them (paths relative to the directory).
 */
export interface ZulipExport {
  realm: Record<string, Rec[]>;
  messages: Rec[];
  userMessages: Rec[];
  attachment: Record<string, Rec[]>;
  /** Directory name ('uploads', 'avatars', 'emoji', 'realm_icons') -> records and files by relative path. */
  files: Record<string, { records: Rec[]; data: Map<string, Buffer> }>;
}

export const FILE_DIRECTORIES = ['uploads', 'avatars', 'emoji', 'realm_icons'] as const;

/** Zulip's MESSAGE_BATCH_CHUNK_SIZE. */
const MESSAGES_PER_FILE = 1000;

export class ExportFormatError extends Error {}

function json(data: unknown): Buffer {
  return Buffer.from(JSON.stringify(data, null, 1));
}

/**
 * The export as a gzip-compressed tarball whose entries sit under `top/`, as Zulip's
 * `tar -czf` of its output directory does.
 */
export function zulipExportTarball(data: ZulipExport, top: string, mtime: number): Buffer {
  const parts: Buffer[] = [];
  const add = (name: string, body: Buffer) => parts.push(tarHeader(`${top}/${name}`, body.length, mtime), body, tarPadding(body.length));
  add('realm.json', json(data.realm));
  const ids = new Set<unknown>();
  const byMessage = new Map<unknown, Rec[]>();
  for (const um of data.userMessages) {
    let list = byMessage.get(um.message);
    if (!list) byMessage.set(um.message, (list = []));
    list.push(um);
  }
  for (let i = 0, n = 1; i < Math.max(data.messages.length, 1); i += MESSAGES_PER_FILE, n++) {
    const chunk = data.messages.slice(i, i + MESSAGES_PER_FILE);
    for (const m of chunk) ids.add(m.id);
    const userMessages = chunk.flatMap((m) => byMessage.get(m.id) ?? []);
    add(`messages-${String(n).padStart(6, '0')}.json`, json({ zerver_message: chunk, zerver_usermessage: userMessages }));
  }
  add('attachment.json', json(data.attachment));
  for (const dir of FILE_DIRECTORIES) {
    const files = data.files[dir] ?? { records: [], data: new Map() };
    add(`${dir}/records.json`, json(files.records));
    for (const [path, body] of files.data) add(`${dir}/${path}`, body);
  }
  parts.push(TAR_END);
  return gzipSync(Buffer.concat(parts));
}

function emptyExport(): ZulipExport {
  return { realm: {}, messages: [], userMessages: [], attachment: { zerver_attachment: [] }, files: {} };
}

/** Adds one file of the export (path relative to the export's top directory). */
function take(data: ZulipExport, path: string, body: Buffer): void {
  const parse = (): Record<string, unknown> => {
    try {
      return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      throw new ExportFormatError(`${path} is not valid JSON`);
    }
  };
  if (path === 'realm.json') data.realm = parse() as Record<string, Rec[]>;
  else if (/^messages-\d+\.json$/.test(path)) {
    const file = parse();
    data.messages.push(...((file.zerver_message as Rec[] | undefined) ?? []));
    data.userMessages.push(...((file.zerver_usermessage as Rec[] | undefined) ?? []));
  } else if (path === 'attachment.json') data.attachment = parse() as Record<string, Rec[]>;
  else {
    const slash = path.indexOf('/');
    const dir = slash > 0 ? path.slice(0, slash) : '';
    if (!(FILE_DIRECTORIES as readonly string[]).includes(dir)) return;
    const files = (data.files[dir] ??= { records: [], data: new Map() });
    const rest = path.slice(slash + 1);
    if (rest === 'records.json') files.records = parse() as unknown as Rec[];
    else files.data.set(rest, body);
  }
}

/**
 * Reads an export: a directory (as `manage.py export` leaves it before taring) or a `.tar.gz`
 * of one. The top directory of a tarball is found by its `realm.json`.
 */
export async function readZulipExport(path: string): Promise<ZulipExport> {
  if (!existsSync(path)) throw new ExportFormatError(`${path} does not exist`);
  const data = emptyExport();
  if (statSync(path).isDirectory()) {
    if (!existsSync(join(path, 'realm.json'))) throw new ExportFormatError(`${path} has no realm.json: not a Zulip export`);
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.isFile()) take(data, relative(path, full).split('\\').join('/'), readFileSync(full));
      }
    };
    walk(path);
    return data;
  }
  const entries: { name: string; body: Buffer }[] = [];
  try {
    await readTar(createReadStream(path).pipe(createGunzip()), ({ name }) => {
      const parts: Buffer[] = [];
      return { write: (chunk) => void parts.push(chunk), end: () => void entries.push({ name: name.replace(/^\.\//, ''), body: Buffer.concat(parts) }) };
    });
  } catch (e) {
    throw new ExportFormatError(`${path} is not a readable .tar.gz export: ${e instanceof Error ? e.message : String(e)}`);
  }
  const realmJson = entries.find((e) => e.name === 'realm.json' || e.name.endsWith('/realm.json'));
  if (!realmJson) throw new ExportFormatError(`${path} has no realm.json: not a Zulip export`);
  const top = realmJson.name.slice(0, realmJson.name.length - 'realm.json'.length);
  for (const e of entries) if (e.name.startsWith(top)) take(data, e.name.slice(top.length), e.body);
  return data;
}
