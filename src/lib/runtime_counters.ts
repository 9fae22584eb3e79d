/**
 * Totals kept by the hot paths at the cost of an increment each, read by GET /metrics
 * (plugins/metrics.ts) only when it is scraped. Per process, since it started.
 */
export const runtimeCounters = {
  /** Messages written by doSendMessage. */
  messagesSent: 0,
  /** Events added to this process's event queues (heartbeats not counted). */
  eventsQueued: 0,
  /** Database queries, and the seconds they took, when the database observes them (metrics on). */
  dbQueries: 0,
  dbQuerySeconds: 0,
};
