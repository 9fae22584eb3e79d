import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import { errorText, useId, useSaver } from './common';

interface Status {
  enabled: boolean;
  recovery_codes_left: number;
  required: boolean;
  available: boolean;
}

/**
 * Two-factor authentication in Account & privacy (Zulip's /account/two_factor/): enrol an
 * authenticator app with its key, confirm with a code, see the recovery codes once; then get
 * new recovery codes or turn it off, each with a current code.
 */
export function TwoFactorSetting() {
  const [status, setStatus] = useState<Status | null>(null);
  const [setup, setSetup] = useState<{ secret: string; otpauth_uri: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const saver = useSaver();
  const codeId = useId('tfa');

  const load = () =>
    api('GET', '/users/me/two_factor').then(
      (r) => setStatus(r.two_factor as Status),
      (e: unknown) => setError(errorText(e)),
    );
  useEffect(() => void load(), []);

  if (error) return <p role="alert">{error}</p>;
  if (!status?.available) return null;

  const withCode = (f: (code: string) => Promise<Record<string, any>>, after: (r: Record<string, any>) => void) => (e: Event) => {
    e.preventDefault();
    void saver.run(async () => {
      const r = await f(code.trim());
      setCode('');
      after(r);
      await load();
    });
  };

  const codeField = (
    <>
      <label for={codeId}>{setup ? 'Code from the app' : 'Current code or recovery code'}</label>
      <input id={codeId} inputMode="numeric" autocomplete="one-time-code" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
    </>
  );

  return (
    <div class="two-factor">
      <h4>Two-factor authentication</h4>
      {codes && (
        <div role="status">
          <p>Your recovery codes. Each logs you in once without your phone; keep them safe, they are not shown again.</p>
          <ul aria-label="Recovery codes">
            {codes.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
      {status.enabled ? (
        <form class="setting-grid" onSubmit={(e) => e.preventDefault()}>
          <p>
            On. Logging in with your password also asks for a code from your authenticator app ({status.recovery_codes_left} recovery codes left).
          </p>
          {codeField}
          <div class="setting-actions">
            <button type="button" disabled={!code} onClick={withCode((c) => api('POST', '/users/me/two_factor/recovery_codes', { code: c }), (r) => setCodes(r.recovery_codes))}>
              New recovery codes
            </button>
            {!status.required && (
              <button type="button" class="danger" disabled={!code} onClick={withCode((c) => api('DELETE', '/users/me/two_factor', { code: c }), () => setCodes(null))}>
                Turn off two-factor authentication
              </button>
            )}
            {saver.status}
          </div>
        </form>
      ) : setup ? (
        <form
          class="setting-grid"
          onSubmit={withCode(
            (c) => api('POST', '/users/me/two_factor/confirm', { code: c }),
            (r) => {
              setSetup(null);
              setCodes(r.recovery_codes);
            },
          )}
        >
          <p>
            Add this key to an authenticator app: <code aria-label="Setup key">{setup.secret.replace(/(.{4})/g, '$1 ').trim()}</code> (
            <a href={setup.otpauth_uri}>open in an authenticator app</a>), then type the code it shows.
          </p>
          {codeField}
          <div class="setting-actions">
            <button class="primary" type="submit" disabled={!code}>
              Turn on
            </button>
            {saver.status}
          </div>
        </form>
      ) : (
        <div class="setting-actions">
          <p>Off. {status.required ? 'This server requires it for administrators: you will set it up at your next login.' : 'Ask for a code from your phone when you log in with your password.'}</p>
          <button type="button" onClick={() => void saver.run(async () => setSetup(await api('POST', '/users/me/two_factor/setup') as { secret: string; otpauth_uri: string }))}>
            Set up two-factor authentication
          </button>
          {saver.status}
        </div>
      )}
    </div>
  );
}
