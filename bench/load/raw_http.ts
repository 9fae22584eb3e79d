import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  body: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/**
 * One keep-alive HTTP/1.1 connection with one request in flight, parsing only what the
 * bench needs (status, Content-Length, body). Node's http client costs several times more
 * per response, which would make the load generator, not the server, the bottleneck when
 * ten thousand long-polls are answered at once.
 */
export class RawConnection {
  private buf: Buffer = Buffer.alloc(0);
  /** A response whose body is still arriving: its chunks so far, their length, and the length of the whole. */
  private parts: Buffer[] = [];
  private have = 0;
  private need = 0;
  private pending: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | null = null;
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const fail = (e: Error): void => {
      this.closed = true;
      const p = this.pending;
      this.pending = null;
      p?.reject(e);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.removeListener('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** `head` is the request line and headers without the final blank line. */
  request(head: string, body?: string): Promise<RawResponse> {
    if (this.closed) return Promise.reject(new Error('connection closed'));
    if (this.pending) return Promise.reject(new Error('request already in flight'));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      if (body === undefined) this.socket.write(`${head}\r\n\r\n`);
      else this.socket.write(`${head}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    // Chunks of a large body are kept apart and joined once, when the body is complete.
    if (this.need > 0) {
      this.parts.push(chunk);
      this.have += chunk.length;
      if (this.have < this.need) return;
      chunk = Buffer.concat(this.parts, this.have);
      this.parts = [];
      this.have = 0;
      this.need = 0;
    }
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const end = this.buf.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!m) {
      this.socket.destroy(new Error(`response without Content-Length: ${head.slice(0, 200)}`));
      return;
    }
    const length = Number(m[1]);
    const total = end + 4 + length;
    if (this.buf.length < total) {
      this.parts = [this.buf];
      this.have = this.buf.length;
      this.need = total;
      this.buf = Buffer.alloc(0);
      return;
    }
    const status = Number(head.slice(9, 12));
    const body = this.buf.toString('utf8', end + 4, total);
    this.buf = this.buf.length === total ? Buffer.alloc(0) : this.buf.subarray(total);
    const p = this.pending;
    this.pending = null;
    p?.resolve({ status, body });
  }
}

/** The request line and headers of an API request. */
export function requestHead(method: string, path: string, host: string, auth: string, form: boolean): string {
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${auth}\r\nUser-Agent: ParleyBench/1.0`;
  if (form) head += '\r\nContent-Type: application/x-www-form-urlencoded';
  return head;
}
