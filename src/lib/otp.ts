import { createCipheriv, randomBytes } from 'node:crypto';
import { JsonableError } from '../errors.js';

/** Zulip's API_KEY_LENGTH: an OTP is twice as many hex digits, one byte per key character. */
const API_KEY_LENGTH = 32;

/** Zulip's is_valid_otp: exactly 64 hex digits. */
export function isValidOtp(otp: string): boolean {
  return otp.length === 2 * API_KEY_LENGTH && /^[0-9a-fA-F]+$/.test(otp);
}

/** Zulip's validate_otp_params. */
export function validateOtpParams(mobileFlowOtp: string | undefined, desktopFlowOtp: string | undefined): void {
  for (const otp of [mobileFlowOtp, desktopFlowOtp]) {
    if (otp !== undefined && !isValidOtp(otp)) throw new JsonableError('Invalid OTP', 'BAD_REQUEST');
  }
  if (mobileFlowOtp && desktopFlowOtp) throw new JsonableError("Can't use both mobile_flow_otp and desktop_flow_otp together.", 'BAD_REQUEST');
}

/**
 * Zulip's otp_encrypt_api_key: the key's ASCII as hex, XORed hex digit by hex digit with the
 * one-time pad. The app holding the pad XORs again to read the key.
 */
export function otpEncryptApiKey(apiKey: string, otp: string): string {
  const hexKey = Buffer.from(apiKey, 'ascii').toString('hex');
  if (hexKey.length !== otp.length) throw new Error('API key and OTP lengths differ');
  let out = '';
  for (let i = 0; i < hexKey.length; i++) out += (parseInt(hexKey[i]!, 16) ^ parseInt(otp[i]!, 16)).toString(16);
  return out;
}

/**
 * Zulip's finish_desktop_flow encryption: AES-256-GCM with the OTP as key and a random 96-bit
 * IV, written as hex(iv + ciphertext + tag), which the desktop app decrypts with the pad it made.
 */
export function desktopFlowEncrypt(token: string, otp: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(otp, 'hex'), iv);
  const ct = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('hex');
}
