import { after } from 'node:test';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One email as a real SMTP server on loopback received it, parsed, per recipient. */
export interface ReceivedMail {
  to: string;
  mail: ParsedMail;
}

/**
 * A loopback SMTP server for a test file, closed after it: `inbox` collects every email the
 * server under test sends (one entry per recipient); point SMTP_URL / smtpUrl at `url`.
 */
export async function loopbackSmtp(): Promise<{ url: string; inbox: ReceivedMail[] }> {
  const inbox: ReceivedMail[] = [];
  const smtp = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream).then((mail) => {
        for (const r of session.envelope.rcptTo) inbox.push({ to: r.address, mail });
        callback();
      }, callback);
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  after(() => smtp.close());
  return { url: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, inbox };
}
