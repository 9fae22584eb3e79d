import { useEffect, useState } from 'preact/hooks';
import { ApiError, NetworkError, postPage } from '../api/client';
import { Avatar } from './Avatar';

interface ServerSettings {
  realm_name?: string;
  realm_icon?: string;
  require_email_format_usernames?: boolean;
  authentication_methods?: { password?: boolean };
  external_authentication_methods?: { name: string; display_name: string; display_icon: string | null; login_url: string }[];
}

/** A provider's login URL carrying the app flow and the page to return to, as Zulip's buttons do. */
function externalLoginHref(loginUrl: string, q: URLSearchParams): string {
  const params = new URLSearchParams();
  for (const k of ['mobile_flow_otp', 'desktop_flow_otp']) {
    const v = q.get(k);
    if (v) params.set(k, v);
  }
  params.set('next', (q.get('next') ?? '/') + window.location.hash);
  return `${loginUrl}?${params.toString()}`;
}

/** The login's second step: the first step's token, and the key to add when enrolling now. */
interface TwoFactorStep {
  token: string;
  enrolment: { secret: string; otpauth_uri: string } | null;
}

/**
 * /login (and /accounts/login/, which Zulip's apps open): email and password, then the
 * two-factor code when the person has enrolled (or must), errors in place.
 */
export function Login() {
  const q = new URLSearchParams(window.location.search);
  const [settings, setSettings] = useState<ServerSettings>({});
  const [email, setEmail] = useState(q.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [desktopData, setDesktopData] = useState<string | null>(null);
  const [twoFactor, setTwoFactor] = useState<TwoFactorStep | null>(null);
  const [code, setCode] = useState('');
  const [recoveryCodes, setRecoveryCodes] = useState<{ codes: string[]; then: Record<string, any> } | null>(null);

  useEffect(() => {
    fetch('/api/v1/server_settings')
      .then((r) => r.json())
      .then((s: ServerSettings) => {
        setSettings(s);
        if (s.realm_name) document.title = `Log in · ${s.realm_name}`;
      })
      .catch(() => undefined);
  }, []);

  /** Where a complete login goes: the desktop app's token, or the page (or zulip:// URL) named. */
  const finish = (r: Record<string, any>) => {
    if (r.desktop_data) setDesktopData(r.desktop_data);
    else window.location.assign(r.redirect_to);
  };

  const run = async (e: Event, request: () => Promise<void>) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await request();
    } catch (err) {
      if (err instanceof ApiError) setError(err.code === 'RATE_LIMIT_HIT' ? 'Too many attempts. Wait a few minutes and try again.' : err.message);
      else if (err instanceof NetworkError) setError('The server cannot be reached. Check your connection and try again.');
      else throw err;
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: Event) =>
    run(e, async () => {
      const r = await postPage('/accounts/login/', {
        username: email,
        password,
        // The fragment never reaches the server: carry it to the app by hand.
        next: (q.get('next') ?? '/') + window.location.hash,
        mobile_flow_otp: q.get('mobile_flow_otp') ?? undefined,
        desktop_flow_otp: q.get('desktop_flow_otp') ?? undefined,
      });
      if (r.two_factor_required) setTwoFactor({ token: r.two_factor_token, enrolment: r.enrolment });
      else finish(r);
    });

  const submitCode = (e: Event) =>
    run(e, async () => {
      const r = await postPage('/accounts/login/two_factor', { two_factor_token: twoFactor!.token, code: code.trim() });
      if (r.recovery_codes) setRecoveryCodes({ codes: r.recovery_codes, then: r });
      else finish(r);
    });

  const usernameLabel = settings.require_email_format_usernames === false ? 'Username' : 'Email';
  const external = settings.external_authentication_methods ?? [];
  // With passwords (and the directory) switched off, single sign-on is the only way in.
  const passwordForm = settings.authentication_methods?.password !== false || external.length === 0;

  return (
    <main class="login">
      <div class="login-box">
        <header class="login-head">
          {settings.realm_name && <Avatar url={settings.realm_icon} name={settings.realm_name} id={0} size={48} />}
          <h1>{settings.realm_name ? `Log in to ${settings.realm_name}` : 'Log in'}</h1>
        </header>
        {error && (twoFactor || recoveryCodes) && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        {desktopData ? (
          <div class="desktop-token">
            <p>Copy this login token and return to your Zulip app to finish logging in:</p>
            <input readOnly value={desktopData} aria-label="Login token" onFocus={(e) => (e.target as HTMLInputElement).select()} />
            <button type="button" onClick={() => void navigator.clipboard?.writeText(desktopData)}>
              Copy
            </button>
            <p>You may then close this window.</p>
          </div>
        ) : recoveryCodes ? (
          <div class="login-recovery">
            <h2>Save your recovery codes</h2>
            <p>Each code logs you in once if you lose your phone. Keep them somewhere safe; they are not shown again.</p>
            <ul aria-label="Recovery codes">
              {recoveryCodes.codes.map((c) => (
                <li key={c}>
                  <code>{c}</code>
                </li>
              ))}
            </ul>
            <button type="button" class="primary" onClick={() => finish(recoveryCodes.then)}>
              Continue
            </button>
          </div>
        ) : twoFactor ? (
          <form onSubmit={submitCode} noValidate>
            <h2>Two-factor authentication</h2>
            {twoFactor.enrolment ? (
              <div class="login-enrol">
                <p>This organization requires administrators to use two-factor authentication. Add this key to an authenticator app, then type the code it shows.</p>
                <p>
                  Key: <code aria-label="Setup key">{twoFactor.enrolment.secret.replace(/(.{4})/g, '$1 ').trim()}</code>
                </p>
                <p>
                  <a href={twoFactor.enrolment.otpauth_uri}>Open in an authenticator app</a>
                </p>
              </div>
            ) : (
              <p>Type the code from your authenticator app, or one of your recovery codes.</p>
            )}
            <label for="login-code">Code</label>
            <input
              id="login-code"
              name="code"
              type="text"
              inputMode="numeric"
              autoComplete="one-time-code"
              autoCapitalize="none"
              required
              autoFocus
              value={code}
              onInput={(e) => setCode((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary" disabled={busy}>
              Verify
            </button>
          </form>
        ) : (
          <>
            {external.length > 0 && (
              <div class="login-external">
                {external.map((m) => (
                  <a key={m.name} class="button login-external-button" href={externalLoginHref(m.login_url, q)}>
                    {m.display_icon && <img src={m.display_icon} alt="" width={20} height={20} />}
                    Log in with {m.display_name}
                  </a>
                ))}
                {passwordForm && (
                  <p class="login-or" aria-hidden="true">
                    or
                  </p>
                )}
              </div>
            )}
            {passwordForm && (
              <form onSubmit={submit} noValidate>
                {error && (
                  <p class="form-error" role="alert">
                    {error}
                  </p>
                )}
                <label for="login-email">{usernameLabel}</label>
                <input
                  id="login-email"
                  name="username"
                  type="text"
                  inputMode={usernameLabel === 'Email' ? 'email' : 'text'}
                  autoCapitalize="none"
                  autoComplete="username"
                  required
                  autoFocus
                  value={email}
                  onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
                />
                <label for="login-password">Password</label>
                <input
                  id="login-password"
                  name="password"
                  type="password"
                  autoComplete="current-password"
                  required
                  value={password}
                  onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
                />
                <button type="submit" class="primary" disabled={busy}>
                  Log in
                </button>
                <p class="login-forgot">
                  <a href="/accounts/password/reset">Forgot your password?</a>
                </p>
              </form>
            )}
          </>
        )}
      </div>
    </main>
  );
}
