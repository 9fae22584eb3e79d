/** What a push service said about one notification to one device. */
export type DeliveryOutcome =
  | { kind: 'sent' }
  /** The service says the token is dead (unregistered, malformed, not for this app): forget it. */
  | { kind: 'drop'; reason: string }
  /** Worth another try (throttled, the service's own failure, a stale credential). */
  | { kind: 'retry'; reason: string; retryAfter?: string | null }
  /** Refused for a reason another try will not change. */
  | { kind: 'failed'; reason: string };

/** Attempts per device, the first wait between them (doubling), and the longest wait honoured. */
const ATTEMPTS = 3;
const FIRST_RETRY_MS = 500;
const MAX_WAIT_MS = 10_000;

function waitFor(outcome: { retryAfter?: string | null }, backoff: number): number {
  const seconds = Number(outcome.retryAfter);
  if (outcome.retryAfter && Number.isFinite(seconds) && seconds >= 0) return Math.min(MAX_WAIT_MS, seconds * 1000);
  return backoff;
}

/**
 * Sends to one device, trying again with exponential backoff (or the service's Retry-After,
 * capped) while the service answers "retry" or cannot be reached. Never throws: the last
 * outcome is returned, so one device's trouble is reported without stopping the others.
 */
export async function sendWithRetries(send: () => Promise<DeliveryOutcome>): Promise<DeliveryOutcome> {
  let backoff = FIRST_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    let outcome: DeliveryOutcome;
    try {
      outcome = await send();
    } catch (e) {
      outcome = { kind: 'retry', reason: (e as Error).message };
    }
    if (outcome.kind !== 'retry' || attempt >= ATTEMPTS) return outcome;
    await new Promise((r) => setTimeout(r, waitFor(outcome, backoff)));
    backoff *= 2;
  }
}
