import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { captureOutput, ROOT, spawnPinned } from '../lib/proc.js';
import type { OrgChannel, OrgPerson, OrgRates } from './people.js';

/** A user the load generator acts as: the Host header selects the organization. */
export interface QueueUser {
  host: string;
  auth: string;
}

export interface AutocannonRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export type Job =
  /** The server processes' ports: queues, senders and autocannon connections are spread over them. */
  | { kind: 'configure'; ports: number[] }
  | { kind: 'autocannon'; connections: number; warmupMs: number; durationMs: number; requests: AutocannonRequest[] }
  | { kind: 'register'; set: string; users: QueueUser[]; count: number; params: string; concurrency: number }
  | { kind: 'hold'; set: string }
  | { kind: 'release'; set: string }
  | { kind: 'health'; set: string }
  | {
      kind: 'send';
      mode: 'closed' | 'open';
      concurrency: number;
      rate: number;
      warmupMs: number;
      durationMs: number;
      senders: QueueUser[];
      stream: string;
      topics: string[];
      trackSet: string;
    }
  | { kind: 'fanout'; senders: QueueUser[]; stream: string; topics: string[]; trackSet: string }
  /** Simulated people (people.ts): who they are, then register, run, storm and stop. */
  | { kind: 'org-configure'; people: OrgPerson[]; channels: OrgChannel[]; rates: OrgRates }
  | { kind: 'org-connect'; concurrency: number }
  | { kind: 'org-run'; warmupMs: number; durationMs: number }
  | { kind: 'org-storm-begin' }
  | { kind: 'org-await-back'; timeoutMs: number }
  | { kind: 'org-stop' };

export type JobResult = Record<string, unknown>;

/** The orchestrator's handle on the load-generator process. */
export class LoadGenerator {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (r: JobResult) => void; reject: (e: Error) => void }>();
  private readonly output: () => string;

  private constructor(private readonly child: ChildProcess) {
    this.output = captureOutput(child, process.env.BENCH_VERBOSE === '1');
    child.on('message', (msg: { id: number; result?: JobResult; error?: string }) => {
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.error !== undefined) w.reject(new Error(`load generator: ${msg.error}`));
      else w.resolve(msg.result!);
    });
    child.on('exit', (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`load generator exited (${code}):\n${this.output()}`));
      this.waiting.clear();
    });
  }

  static start(core: number | null): LoadGenerator {
    const script = join(ROOT, 'bench', 'load', 'worker.ts');
    return new LoadGenerator(spawnPinned({ core, args: ['--import', 'tsx', script], ipc: true }));
  }

  run<T extends object = JobResult>(job: Job): Promise<T> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (r: JobResult) => void, reject });
      this.child.send({ id, job });
    });
  }

  stop(): void {
    this.child.disconnect();
  }
}
