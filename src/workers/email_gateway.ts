import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { checkEmailRecipient, doProcessEmail, EmailGatewayError, type EmailTarget } from '../actions/email_gateway.js';
import type { Services } from '../services.js';

/** An SMTP reply for smtp-server: the message and the code it answers with. */
function smtpError(message: string, code: number): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/** The gateway's refusal as an SMTP reply; anything unexpected is logged and answered 451 (try later). */
function replyFor(services: Services, e: unknown, recipient: string | null): Error {
  if (e instanceof EmailGatewayError) {
    services.log.info({ recipient: redact(recipient) }, `Email gateway refused mail: ${e.message}`);
    return smtpError(e.message, e.smtpCode);
  }
  services.log.error({ err: e, recipient: redact(recipient) }, 'Email gateway failed to process mail');
  return smtpError('Local error in processing', 451);
}

/** The token is a credential: logs show only its domain (as Zulip's redact_email_address). */
function redact(address: string | null): string | null {
  if (address === null) return null;
  const at = address.lastIndexOf('@');
  return at < 0 ? 'X'.repeat(address.length) : `${'X'.repeat(at)}${address.slice(at)}`;
}

type GatewaySession = SMTPServerSession & { targets?: Map<string, EmailTarget> };

/**
 * The email gateway's SMTP listener (Zulip's email mirror, as its LMTP server does it): RCPT TO
 * is accepted only for a channel or missed-message reply address the gateway would post
 * (550 otherwise), a message over `maxMessageBytes` is refused (552), and each accepted message
 * is parsed and posted before the DATA reply, so a refusal reaches the sending server. Runs only
 * in processes configured with a port.
 */
export class EmailGatewayServer {
  private readonly server: SMTPServer;

  constructor(private readonly services: Services) {
    const { config } = services;
    this.server = new SMTPServer({
      name: config.emailGateway.domain ?? undefined,
      banner: 'Parley email gateway',
      size: config.emailGateway.maxMessageBytes,
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      closeTimeout: 1000,
      onRcptTo: (address, session, callback) => {
        this.acceptRecipient(address, session as GatewaySession).then(
          () => callback(),
          (e: unknown) => callback(replyFor(services, e, address.address)),
        );
      },
      onData: (stream, session, callback) => {
        this.receive(stream, session as GatewaySession).then(
          () => callback(),
          (e: unknown) => callback(e instanceof Error && 'responseCode' in e ? e : replyFor(services, e, null)),
        );
      },
    });
    this.server.on('error', (err) => services.log.error({ err }, 'Email gateway connection error'));
  }

  private async acceptRecipient(address: SMTPServerAddress, session: GatewaySession): Promise<void> {
    const target = await checkEmailRecipient(this.services, address.address);
    (session.targets ??= new Map()).set(address.address, target);
  }

  private async receive(stream: SMTPServerDataStream, session: GatewaySession): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    if (stream.sizeExceeded) throw smtpError('Message exceeds fixed maximum message size', 552);
    let mail;
    try {
      mail = await simpleParser(Buffer.concat(chunks), { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
    } catch (e) {
      this.services.log.info({ err: e }, 'Email gateway could not parse a message');
      throw smtpError('Could not parse the message', 550);
    }
    const targets = session.targets ?? new Map<string, EmailTarget>();
    session.targets = new Map();
    let posted = 0;
    let firstError: Error | null = null;
    for (const { address: recipient } of session.envelope.rcptTo) {
      const target = targets.get(recipient);
      if (!target) continue;
      try {
        await doProcessEmail(this.services, target, mail);
        posted++;
      } catch (e) {
        firstError ??= replyFor(this.services, e, recipient);
      }
    }
    if (posted === 0 && firstError) throw firstError;
  }

  /** Starts listening on the configured port (0: any free port) and host. */
  async listen(): Promise<AddressInfo> {
    const { port, host } = this.services.config.emailGateway;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port ?? 0, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.address();
  }

  address(): AddressInfo {
    return this.server.server.address() as AddressInfo;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
