// A real OAuth 2.1 / OpenID authorization server for the tests: panva's oidc-provider (a
// certified implementation) on 127.0.0.1:$PORT. It issues RS256 JWT access tokens for the
// resource $RESOURCE (RFC 8707 resource indicators, RFC 9068 JWTs) by client credentials and
// by authorization code with PKCE (the login and consent are answered by the test as a user
// would, through the provider's own interaction pages), refreshes them, and registers
// clients dynamically (RFC 7591); the client 'signer' ($SIGNER_JWK) authenticates with
// private_key_jwt. Access tokens live $TOKEN_TTL seconds (default 300; the
// client 'shortlived' gets tokens of two seconds).
import Provider from "oidc-provider";

const port = Number(process.env.PORT);
const resource = process.env.RESOURCE;
// Another resource server's URL: tokens for it must not be accepted by ours.
const other = process.env.OTHER_RESOURCE || "http://127.0.0.1:9/other";
const ttl = Number(process.env.TOKEN_TTL || 300);
const issuer = `http://127.0.0.1:${port}`;
const scopes = ["tools:read", "tools:admin", "tools:other"];
// The public key (a JWK) of the client 'signer', which authenticates with client assertions
// signed by its private key (private_key_jwt, RFC 7523) instead of a secret.
const signer = process.env.SIGNER_JWK ? [{
  client_id: "signer",
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  scope: "tools:read tools:admin",
  token_endpoint_auth_method: "private_key_jwt",
  jwks: { keys: [JSON.parse(process.env.SIGNER_JWK)] },
}] : [];

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "machine",
      client_secret: "machine-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: "tools:read tools:admin",
    },
    {
      client_id: "shortlived",
      client_secret: "shortlived-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: "tools:read tools:admin",
    },
    {
      client_id: "reader",
      client_secret: "reader-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: "tools:read tools:other",
    },
    ...signer,
  ],
  scopes: ["openid", "offline_access", ...scopes],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, client) => {
        if (indicator !== resource && indicator !== other) {
          throw new Error(`unknown resource ${indicator}`);
        }
        return {
          scope: scopes.join(" "),
          audience: indicator,
          accessTokenFormat: "jwt",
          accessTokenTTL: client.clientId === "shortlived" ? 2 : ttl,
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
  // Refresh tokens for every client registered for the refresh_token grant.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  loadExistingGrant: async (ctx) => {
    // Consent given once is consent given: grant what the client asked for.
    const grantId = ctx.oidc.result?.consent?.grantId ||
      ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope("openid offline_access");
    grant.addResourceScope(resource, scopes.join(" "));
    await grant.save();
    return grant;
  },
  ttl: {
    AccessToken: ttl,
    ClientCredentials: (ctx, token, client) => (client.clientId === "shortlived" ? 2 : ttl),
  },
});
provider.proxy = false;
provider.listen(port, "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
