import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import { lazyRequire } from './lazy.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  replyTo?: string;
  headers?: Record<string, string>;
  messageId?: string;
}

/**
 * Sends mail through SMTP_URL when configured. Otherwise every email is logged and written
 * to ./data/emails/ as an .eml file, so an installation without mail still shows what it
 * would have sent (invitation links included).
 */
export interface Mailer {
  send(email: OutgoingEmail): Promise<void>;
  close(): void;
}

const nodemailer = lazyRequire<typeof import('nodemailer')>('nodemailer');

export function createMailer(config: Config, log: FastifyBaseLogger): Mailer {
  // The transport (and nodemailer itself) is created by the first email.
  let transport: Transporter | null = null;
  const close = (): void => transport?.close();
  const smtpUrl = config.smtpUrl;
  if (smtpUrl) {
    return {
      async send(email) {
        transport ??= nodemailer().createTransport(smtpUrl);
        await transport.sendMail({ from: config.emailFrom, ...email });
      },
      close,
    };
  }
  const dir = join(config.dataDir, 'emails');
  let counter = 0;
  return {
    async send(email) {
      transport ??= nodemailer().createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
      const info = (await transport.sendMail({ from: config.emailFrom, ...email })) as { message: Buffer };
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${Date.now()}-${process.pid}-${++counter}.eml`);
      writeFileSync(file, info.message);
      log.info({ to: email.to, subject: email.subject, file }, 'email written (SMTP_URL not set)');
    },
    close,
  };
}
