import { JsonableError } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { fetchUserById } from '../db/repos/users.js';
import { fetchMessagesByIds } from '../db/repos/messages.js';
import { fetchBotServices, type BotService } from '../db/repos/bots.js';
import { checkSendMessage, doSendMessage } from '../actions/messages.js';
import { INTERFACE_SLACK } from '../actions/bots.js';
import { formatMessages, type MessageDict } from '../lib/format/messages.js';
import { realmSettings } from '../lib/realm_settings.js';
import { realmUrl } from '../lib/urls.js';
import { ZULIP_VERSION } from '../version.js';
import { now, transaction, type Tx } from '../db/index.js';
import {
  claimOutgoingWebhookJobs,
  deleteClaimedOutgoingWebhookJob,
  retryClaimedOutgoingWebhookJob,
  type OutgoingWebhookJobRow,
} from '../db/repos/outgoing_webhooks.js';
import type { ActionServices } from '../services.js';
import { PeriodicWorker } from './periodic.js';

/** Zulip's MAX_REQUEST_RETRIES: a request that timed out or could not connect is tried again this many times. */
export const MAX_REQUEST_RETRIES = 3;

/** Rows taken per look at the queue (their deliveries run concurrently). */
const CLAIM_BATCH = 20;

interface Delivery {
  job: OutgoingWebhookJobRow;
  realm: Realm;
  bot: User;
  /** The message as the payload carries it: GET /messages' dict with raw content and rendered_content. */
  message: PayloadMessage;
  /**
   * Ends the job in the transaction of the first message the outcome sends (the bot's reply or
   * failure notice), so that a crash never repeats that message; null once used.
   */
  finish: ((tx: Tx) => Promise<void>) | null;
}

type PayloadMessage = MessageDict & { rendered_content: string };

/** A failure Zulip retries (requests' Timeout and ConnectionError). */
class RetryableFailure extends Error {}

/** Another process took the job over (this one held it past its lease). */
class ClaimLost extends Error {}

/** Python's repr() of a bytes value, as Zulip's notice to the bot owner quotes a response body. */
function pythonBytesRepr(body: Buffer): string {
  const text = body.toString('latin1');
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = `b${quote}`;
  for (const b of body) {
    const c = String.fromCharCode(b);
    if (c === '\\' || c === quote) out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (b < 0x20 || b >= 0x7f) out += `\\x${b.toString(16).padStart(2, '0')}`;
    else out += c;
  }
  return `${out}${quote}`;
}

function isConnectionError(e: unknown): boolean {
  const cause = (e as { cause?: { code?: unknown } } | null)?.cause;
  return e instanceof TypeError && typeof cause?.code === 'string';
}

/**
 * Delivers outgoing webhooks (Zulip's OutgoingWebhookWorker and zerver/lib/outgoing_webhook.py):
 * POSTs the payload in the bot's format, posts a reply from the response as the bot in the same
 * conversation, retries timeouts and connection errors, and tells the conversation and the bot's
 * owner about failures as Zulip does. The queue is `outgoing_webhook_jobs`, written with the
 * message: a send through this process wakes the worker, which also looks every `intervalMs`
 * (sends through other processes, rows whose process died) and at start. A process takes a row
 * for the lease (the timeout per try plus a margin) before its request; the bot's reply, or
 * the failure notice, is sent in the transaction that deletes the row, so each goes out once
 * even across processes and crashes. A crash between the request and that commit repeats the
 * request after the lease, as Zulip's queue repeats an unacknowledged event.
 */
export class OutgoingWebhookWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly loop: PeriodicWorker;

  constructor(
    private readonly services: ActionServices,
    intervalMs: number,
  ) {
    this.loop = new PeriodicWorker(services.log, intervalMs, 'outgoing webhook queue look failed', () => this.pass());
  }

  start(): void {
    this.loop.start();
  }

  /** Looks at the queue soon (after the current look). */
  wake(): void {
    this.loop.wake();
  }

  /** Stops taking work and waits for the deliveries under way. */
  async stop(): Promise<void> {
    await this.loop.stop();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** How long a process holds a row: every try's timeout would fit, with room for the reply. */
  private leaseSeconds(): number {
    return Math.ceil(this.services.config.outgoingWebhookTimeoutMs / 1000) + 10;
  }

  private async pass(): Promise<number | void> {
    const at = now();
    const jobs = await transaction(this.services.db, (tx) => claimOutgoingWebhookJobs(tx, this.services.db.dialect, at, at + this.leaseSeconds(), CLAIM_BATCH));
    for (const job of jobs) {
      const run: Promise<void> = this.deliver(job)
        .catch(async (e: unknown) => {
          if (e instanceof ClaimLost) return;
          // As Zulip's worker drops an event its handler raised on: repeating it would fail again.
          this.services.log.error({ err: e, jobId: job.id }, 'outgoing webhook failed');
          await transaction(this.services.db, (tx) => deleteClaimedOutgoingWebhookJob(tx, job.id, job.claimed_until!));
        })
        .catch((e: unknown) => this.services.log.error({ err: e, jobId: job.id }, 'outgoing webhook job could not be dropped'))
        .finally(() => this.inFlight.delete(run));
      this.inFlight.add(run);
    }
    if (jobs.length === CLAIM_BATCH) return 0;
  }

  private async deliver(job: OutgoingWebhookJobRow): Promise<void> {
    const db = this.services.db.kysely;
    const claimedUntil = job.claimed_until!;
    const finish = async (tx: Tx): Promise<void> => {
      if (!(await deleteClaimedOutgoingWebhookJob(tx, job.id, claimedUntil))) throw new ClaimLost();
    };
    const realm = await fetchRealmById(db, job.realm_id);
    const bot = realm && (await fetchUserById(db, realm.id, job.bot_id));
    const [row] = realm ? await fetchMessagesByIds(db, job.realm_id, [job.message_id]) : [];
    if (!realm || !bot || !bot.is_active || !row) {
      await transaction(this.services.db, finish);
      return;
    }
    // Zulip's finalize_payload(apply_markdown=False, keep_rendered_content=True), without flags.
    const [dict] = await formatMessages(db, realm, realmUrl(this.services.config, realm), [row], {
      applyMarkdown: false,
      clientGravatar: false,
      allowEmptyTopicName: true,
      emptyTopicDisplayName: realmSettings(realm).empty_topic_display_name,
      editHistoryVisibility: realmSettings(realm).message_edit_history_visibility_policy,
    });
    const { flags: _flags, ...rest } = dict!;
    const message: PayloadMessage = { ...rest, rendered_content: row.rendered_content };
    const d: Delivery = { job, realm, bot, message, finish };
    try {
      for (const service of await fetchBotServices(db, [bot.id])) await this.restCall(d, service);
    } catch (e) {
      if (!(e instanceof RetryableFailure)) throw e;
      // Zulip's request_retry: the event goes back to the queue until MAX_REQUEST_RETRIES retries failed.
      const failedTries = job.failed_tries + 1;
      if (failedTries <= MAX_REQUEST_RETRIES) {
        if (!(await retryClaimedOutgoingWebhookJob(db, job.id, claimedUntil, failedTries))) throw new ClaimLost();
        this.wake();
        return;
      }
      await this.failWithMessage(d, 'Bot is unavailable');
      await this.notifyBotOwner(d, { failureMessage: e.message });
    }
    if (d.finish) await transaction(this.services.db, d.finish);
  }

  /** Zulip's do_rest_call. Throws RetryableFailure for what Zulip retries. */
  private async restCall(d: Delivery, service: BotService): Promise<void> {
    const command = String(d.message.content);
    let request: RequestInit;
    if (service.interface === INTERFACE_SLACK) {
      if (d.message.type === 'private') {
        await this.failWithMessage(d, "Slack outgoing webhooks don't support direct messages.");
        return;
      }
      // Slack's legacy outgoing-webhook fields, as Zulip's SlackOutgoingWebhookService sends them.
      const form = new URLSearchParams([
        ['token', service.token],
        ['team_id', `T${d.realm.id}`],
        ['team_domain', new URL(realmUrl(this.services.config, d.realm)).host],
        ['channel_id', `C${String(d.message.stream_id)}`],
        ['channel_name', String(d.message.display_recipient)],
        ['thread_ts', String(d.message.timestamp)],
        ['timestamp', String(d.message.timestamp)],
        ['user_id', `U${String(d.message.sender_id)}`],
        ['user_name', String(d.message.sender_full_name)],
        ['text', command],
        ['trigger_word', d.job.trigger],
        ['service_id', String(d.bot.id)],
      ]);
      request = { body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } };
    } else {
      const payload = {
        data: command,
        message: d.message,
        bot_email: d.bot.email,
        bot_full_name: d.bot.full_name,
        token: service.token,
        trigger: d.job.trigger,
      };
      request = { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } };
    }
    let response: Response;
    let body: Buffer;
    try {
      response = await fetch(service.base_url, {
        method: 'POST',
        ...request,
        headers: { ...(request.headers as Record<string, string>), 'user-agent': `ZulipOutgoingWebhook/${ZULIP_VERSION}` },
        signal: AbortSignal.timeout(this.services.config.outgoingWebhookTimeoutMs),
        redirect: 'manual',
      });
      body = Buffer.from(await response.arrayBuffer());
    } catch (e) {
      if ((e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError') {
        throw new RetryableFailure(`Request timed out after ${this.services.config.outgoingWebhookTimeoutMs / 1000} seconds.`);
      }
      if (isConnectionError(e)) {
        throw new RetryableFailure(
          `The message \`${command}\` resulted in a connection error when sending a request to an outgoing webhook! See the Zulip server logs for more information.`,
        );
      }
      const err = e instanceof Error ? e : new Error(String(e));
      this.services.log.warn({ err, botId: d.bot.id }, 'outgoing webhook request failed');
      await this.failWithMessage(d, `An exception of type *${err.name}* occurred for message \`${command}\`! See the Zulip server logs for more information.`);
      await this.notifyBotOwner(d, { exception: err });
      return;
    }
    if (response.status >= 200 && response.status < 300) {
      try {
        await this.processSuccess(d, service, body.toString('utf8'));
      } catch (e) {
        if (!(e instanceof JsonableError)) throw e;
        await this.failWithMessage(d, e.message);
        await this.notifyBotOwner(d, {
          failureMessage: `The outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> ${e.message}`,
        });
      }
      return;
    }
    this.services.log.warn({ botId: d.bot.id, status: response.status, url: d.job.message_url }, 'outgoing webhook answered with an error status');
    await this.failWithMessage(d, `Third party responded with ${response.status}`);
    await this.notifyBotOwner(d, { statusCode: response.status, responseContent: body });
  }

  /** Zulip's process_success_response with the interface's process_success. */
  private async processSuccess(d: Delivery, service: BotService, text: string): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new JsonableError('Invalid JSON in response', 'BAD_REQUEST', 400);
    }
    // zulip_botserver before 2021-05 answered json.dumps("") for "no response".
    if (json === '') return;
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new JsonableError('Invalid response format', 'BAD_REQUEST', 400);
    const r = json as Record<string, unknown>;
    let content: string | undefined;
    if (service.interface === INTERFACE_SLACK) {
      if ('text' in r) content = pyStr(r.text);
    } else if (!r.response_not_required) {
      if ('response_string' in r) content = pyStr(r.response_string);
      else if ('content' in r) content = pyStr(r.content);
    }
    if (content === undefined || content.trim() === '') return;
    await this.sendResponse(d, d.message.type === 'stream' ? 'stream' : 'private', content);
  }

  /** Zulip's fail_with_message: the failure, as the bot, in the conversation. */
  private async failWithMessage(d: Delivery, failure: string): Promise<void> {
    await this.sendResponse(d, d.message.type === 'stream' ? 'stream' : 'private', `Failure! ${failure}`);
  }

  /** Zulip's send_response_message: the bot answers where the message was. */
  private async sendResponse(d: Delivery, kind: 'stream' | 'private', content: string, toOwner = false): Promise<void> {
    const to =
      kind === 'stream'
        ? String(d.message.stream_id)
        : JSON.stringify(toOwner ? [d.bot.bot_owner_id] : (d.message.display_recipient as { id: number }[]).map((u) => u.id));
    const bot = (await fetchUserById(this.services.db.kysely, d.realm.id, d.bot.id))!;
    const prepared = await checkSendMessage(this.services, d.realm, bot, {
      type: kind,
      to,
      topic: kind === 'stream' ? String(d.message.subject) : undefined,
      content,
      client: 'OutgoingWebhookResponse',
    });
    const finish = d.finish;
    d.finish = null;
    if (finish) prepared.inTransaction = (tx) => finish(tx);
    await doSendMessage(this.services, prepared);
  }

  /** Zulip's notify_bot_owner: a direct message from the bot to its owner. */
  private async notifyBotOwner(
    d: Delivery,
    why: { statusCode?: number; responseContent?: Buffer; failureMessage?: string; exception?: Error },
  ): Promise<void> {
    if (d.bot.bot_owner_id === null) return;
    let text = `[A message](${d.job.message_url}) to your bot @_**${d.bot.full_name}** triggered an outgoing webhook.`;
    if (why.exception) {
      text += `\nWhen trying to send a request to the webhook service, an exception of type ${why.exception.name} occurred:\n\`\`\`\n${why.exception.message}\n\`\`\``;
    } else if (why.failureMessage) {
      text += `\n${why.failureMessage}`;
    } else if (why.statusCode === 407) {
      text += '\nThe URL configured for the webhook is for a private or disallowed network.';
    } else if (why.statusCode) {
      text += `\nThe webhook got a response with status code *${why.statusCode}*.`;
    }
    if (why.responseContent && why.responseContent.length) {
      text += `\nThe response contains the following payload:\n\`\`\`\n${pythonBytesRepr(why.responseContent)}\n\`\`\``;
    }
    await this.sendResponse(d, 'private', text, true);
  }
}

/** Python's str() of a JSON value, as Zulip applies it to response_string and content. */
function pyStr(v: unknown): string {
  if (v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}
