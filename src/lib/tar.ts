/**
 * The ustar archive format (POSIX.1-1988), enough for the archives Parley writes and reads:
 * regular files, names up to 255 bytes (ustar's prefix field), sizes beyond 8 GiB in GNU's
 * base-256 form. Reading also takes what GNU tar writes for other archives (Zulip's exports):
 * directory entries are skipped, GNU long names and pax `path` records name the next entry.
 * Written and read as streams, so an archive never has to fit in memory.
 */

const BLOCK = 512;

/** The header block of a regular file. */
export function tarHeader(name: string, size: number, mtime: number): Buffer {
  const header = Buffer.alloc(BLOCK);
  let nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) {
    // Split at a slash into prefix (up to 155 bytes) and name (up to 100).
    let cut = -1;
    for (let i = nameBytes.length - 1; i >= 0; i--) {
      if (nameBytes[i] === 0x2f && nameBytes.length - i - 1 <= 100 && i <= 155) {
        cut = i;
        break;
      }
    }
    if (cut <= 0) throw new Error(`tar: name too long: ${name}`);
    nameBytes.subarray(0, cut).copy(header, 345);
    nameBytes = nameBytes.subarray(cut + 1);
  }
  nameBytes.copy(header, 0);
  header.write('0000644\0', 100, 'latin1');
  header.write('0000000\0', 108, 'latin1');
  header.write('0000000\0', 116, 'latin1');
  if (size < 8 ** 11) {
    header.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  } else {
    header[124] = 0x80;
    let rest = BigInt(size);
    for (let i = 135; i > 124; i--) {
      header[i] = Number(rest & 0xffn);
      rest >>= 8n;
    }
  }
  header.write(`${Math.floor(mtime).toString(8).padStart(11, '0')}\0`, 136, 'latin1');
  header.write('        ', 148, 'latin1');
  header.write('0', 156, 'latin1');
  header.write('ustar\x0000', 257, 'latin1');
  let sum = 0;
  for (const b of header) sum += b;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return header;
}

/** Zero bytes that bring an entry of `size` bytes to a whole number of blocks. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The two zero blocks that end an archive. */
export const TAR_END = Buffer.alloc(2 * BLOCK);

export class TarFormatError extends Error {}

function parseHeader(block: Buffer): { name: string; size: number; type: string } | null {
  if (block.every((b) => b === 0)) return null;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  const recorded = parseInt(block.toString('latin1', 148, 156).replace(/[\0 ]/g, ''), 8);
  if (recorded !== sum) throw new TarFormatError('bad header checksum');
  const type = block.toString('latin1', 156, 157);
  if (!['0', '\0', '5', 'L', 'x', 'g'].includes(type)) throw new TarFormatError(`unsupported entry type '${type}'`);
  const base = block.toString('utf8', 0, 100).replace(/\0.*$/s, '');
  const prefix = block.toString('latin1', 257, 262) === 'ustar' ? block.toString('utf8', 345, 500).replace(/\0.*$/s, '') : '';
  const name = prefix ? `${prefix}/${base}` : base;
  let size: number;
  if (block[124]! & 0x80) {
    let n = 0n;
    for (let i = 125; i < 136; i++) n = (n << 8n) | BigInt(block[i]!);
    size = Number(n);
  } else {
    size = parseInt(block.toString('latin1', 124, 136).replace(/[\0 ]/g, '') || '0', 8);
  }
  if (!Number.isSafeInteger(size)) throw new TarFormatError('bad entry size');
  return { name, size, type: type === '\0' ? '0' : type };
}

/** Receives one entry's content, in order; awaited, so a slow consumer slows the reading. */
export interface TarEntrySink {
  write(chunk: Buffer): void | Promise<void>;
  end(): void | Promise<void>;
}

/**
 * Reads an archive from `source` (the decompressed bytes), handing each entry to the sink
 * that `onEntry` returns. Throws TarFormatError when the archive stops before its end blocks:
 * a truncated archive is never mistaken for a shorter complete one.
 */
export async function readTar(
  source: AsyncIterable<Buffer>,
  onEntry: (entry: { name: string; size: number }) => TarEntrySink | Promise<TarEntrySink>,
): Promise<void> {
  let pending: Buffer = Buffer.alloc(0);
  let sink: TarEntrySink | null = null;
  let remaining = 0;
  let padding = 0;
  let ended = false;
  /** The name a GNU long-name or pax entry gave the next entry. */
  let nextName: string | null = null;
  /** Collects a metadata entry (long name, pax record) instead of handing it on. */
  const metadata = (type: string): TarEntrySink => {
    const parts: Buffer[] = [];
    return {
      write: (chunk) => void parts.push(chunk),
      end: () => {
        const text = Buffer.concat(parts).toString('utf8');
        if (type === 'L') nextName = text.replace(/\0.*$/s, '');
        else if (type === 'x') {
          const path = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text);
          if (path) nextName = path[1]!;
        }
      },
    };
  };
  const ignore: TarEntrySink = { write: () => undefined, end: () => undefined };
  for await (const chunk of source) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (!ended) {
      if (sink) {
        if (remaining > 0) {
          if (pending.length === 0) break;
          const part = pending.subarray(0, Math.min(remaining, pending.length));
          pending = pending.subarray(part.length);
          remaining -= part.length;
          await sink.write(part);
          if (remaining > 0) break;
        }
        if (pending.length < padding) break;
        pending = pending.subarray(padding);
        const done = sink;
        sink = null;
        await done.end();
        continue;
      }
      if (pending.length < BLOCK) break;
      const header = parseHeader(pending.subarray(0, BLOCK));
      pending = pending.subarray(BLOCK);
      if (!header) {
        ended = true;
        break;
      }
      if (header.type === 'L' || header.type === 'x' || header.type === 'g') {
        sink = metadata(header.type);
      } else {
        const name = nextName ?? header.name;
        nextName = null;
        sink = header.type === '5' ? ignore : await onEntry({ name, size: header.size });
      }
      remaining = header.size;
      padding = (BLOCK - (header.size % BLOCK)) % BLOCK;
    }
  }
  if (!ended) throw new TarFormatError('the archive ends before its last entry is complete');
}
