import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type OidcContext } from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';
import type { OidcProviderConfig } from '../../src/config.js';

/**
 * A real OpenID Connect provider (the `oidc-provider` package, which is certified) on a
 * loopback port, for the single sign-on tests. Its login page is a one-field form ("Email")
 * that signs in whichever account is typed, as a test identity provider; consent is given
 * automatically to the one client. PKCE is required of that client.
 */

export interface TestAccount {
  email: string;
  emailVerified: boolean;
  name: string;
}

export const OIDC_CLIENT_ID = 'parley-test';
export const OIDC_CLIENT_SECRET = 'parley test client secret';

export interface TestOidcProvider {
  issuer: string;
  /** Parley's setting for this provider, under `key`. */
  config(key: string, displayName: string): OidcProviderConfig;
  /** Registers the client once Parley's address (and so its callback URL) is known. */
  register(parleyUrl: string): void;
  close(): Promise<void>;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return new URLSearchParams(body);
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startOidcProvider(accounts: TestAccount[]): Promise<TestOidcProvider> {
  let provider: Provider | null = null;
  const server: Server = createServer((req, res) => {
    if (!provider) {
      res.writeHead(503).end();
      return;
    }
    const p = provider;
    const m = /^\/interaction\/([^/?]+)(\/login)?/.exec(req.url ?? '');
    if (!m) {
      p.callback()(req, res);
      return;
    }
    (async () => {
      const details = await p.interactionDetails(req, res);
      if (req.method === 'POST' && m[2]) {
        const login = (await readForm(req)).get('login') ?? '';
        await p.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><title>Test identity provider</title><h1>Sign in to the test identity provider</h1>` +
          `<form method="post" action="/interaction/${escape(details.uid)}/login"><label for="login">Email</label><input id="login" name="login"><button type="submit">Sign in</button></form>`,
      );
    })().catch((e: Error) => res.writeHead(500).end(e.message));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test' };
  return {
    issuer,
    config: (key, displayName) => ({ key, issuer, clientId: OIDC_CLIENT_ID, clientSecret: OIDC_CLIENT_SECRET, displayName, displayIcon: null }),
    register(parleyUrl) {
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: OIDC_CLIENT_ID,
            client_secret: OIDC_CLIENT_SECRET,
            redirect_uris: [`${parleyUrl}/complete/oidc/`],
            grant_types: ['authorization_code'],
            response_types: ['code'],
          },
        ],
        jwks: { keys: [signingKey] },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
        pkce: { required: () => true },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        cookies: { keys: ['test cookie key'] },
        findAccount: (_ctx: unknown, sub: string) => {
          const a = accounts.find((x) => x.email === sub);
          return a ? { accountId: sub, claims: () => ({ sub, email: a.email, email_verified: a.emailVerified, name: a.name }) } : undefined;
        },
        // The test client is first-party: consent is implied, as a company's IdP configures it.
        loadExistingGrant: async (ctx: OidcContext) => {
          const { session, client, result } = ctx.oidc;
          const id = result?.consent?.grantId ?? session.grantIdFor(client.clientId);
          if (id) return ctx.oidc.provider.Grant.find(id);
          if (!session.accountId) return undefined;
          const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
          grant.addOIDCScope('openid email profile');
          await grant.save();
          return grant;
        },
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
