import { useEffect, useState } from 'preact/hooks';
import { ApiError, NetworkError, postPage } from '../api/client';
import { Avatar } from './Avatar';

interface ServerSettings {
  realm_name?: string;
  realm_icon?: string;
  require_email_format_usernames?: boolean;
  email_auth_enabled?: boolean;
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

/** /login (and /accounts/login/, which Zulip's apps open): email and password, errors in place. */
export function Login() {
  const q = new URLSearchParams(window.location.search);
  const [settings, setSettings] = useState<ServerSettings>({});
  const [email, setEmail] = useState(q.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [desktopData, setDesktopData] = useState<string | null>(null);

  useEffect(() => {
    fetch('/api/v1/server_settings')
      .then((r) => r.json())
      .then((s: ServerSettings) => {
        setSettings(s);
        if (s.realm_name) document.title = `Log in · ${s.realm_name}`;
      })
      .catch(() => undefined);
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await postPage('/accounts/login/', {
        username: email,
        password,
        // The fragment never reaches the server: carry it to the app by hand.
        next: (q.get('next') ?? '/') + window.location.hash,
        mobile_flow_otp: q.get('mobile_flow_otp') ?? undefined,
        desktop_flow_otp: q.get('desktop_flow_otp') ?? undefined,
      });
      if (r.desktop_data) setDesktopData(r.desktop_data);
      else window.location.assign(r.redirect_to);
    } catch (err) {
      if (err instanceof ApiError) setError(err.code === 'RATE_LIMIT_HIT' ? 'Too many attempts. Wait a few minutes and try again.' : err.message);
      else if (err instanceof NetworkError) setError('The server cannot be reached. Check your connection and try again.');
      else throw err;
    } finally {
      setBusy(false);
    }
  };

  const usernameLabel = settings.require_email_format_usernames === false ? 'Username' : 'Email';
  const external = settings.external_authentication_methods ?? [];

  return (
    <main class="login">
      <div class="login-box">
        <header class="login-head">
          {settings.realm_name && <Avatar url={settings.realm_icon} name={settings.realm_name} id={0} size={48} />}
          <h1>{settings.realm_name ? `Log in to ${settings.realm_name}` : 'Log in'}</h1>
        </header>
        {desktopData ? (
          <div class="desktop-token">
            <p>Copy this login token and return to your Zulip app to finish logging in:</p>
            <input readOnly value={desktopData} aria-label="Login token" onFocus={(e) => (e.target as HTMLInputElement).select()} />
            <button type="button" onClick={() => void navigator.clipboard?.writeText(desktopData)}>
              Copy
            </button>
            <p>You may then close this window.</p>
          </div>
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
              <p class="login-or" aria-hidden="true">
                or
              </p>
            </div>
          )}
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
          </>
        )}
      </div>
    </main>
  );
}
