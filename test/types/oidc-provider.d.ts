/** The part of oidc-provider (which ships no types) that test/helpers/oidc_provider.ts uses. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface Interaction {
    uid: string;
    prompt: { name: string };
  }
  export interface GrantInstance {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }
  export interface OidcContext {
    oidc: {
      client: { clientId: string };
      session: { accountId?: string; grantIdFor(clientId: string): string | undefined };
      result?: { consent?: { grantId?: string } };
      provider: Provider;
    };
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    Grant: { new (init: { clientId: string; accountId: string }): GrantInstance; find(id: string): Promise<GrantInstance | undefined> };
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  }
}
