/**
 * At most `limit` callers run at once; the others wait in arrival order. For work that is
 * mostly CPU on this process's one thread: thousands of such requests in flight together all
 * finish late and make every other request wait behind them, while a few at a time finish in
 * turn and leave the event loop to the rest.
 */
export class Gate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiter, so none can be overtaken by a newcomer.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }
}
