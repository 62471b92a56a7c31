// A real OpenID provider for the sign-in tests (issue 28 §1): oidc-provider (OpenID Certified),
// on 127.0.0.1 only, started by tests/oidc/standin.py. Its configuration:
//  - the people: OIDC_USERS, a JSON file read at every sign-in ({"alice": {"email": …,
//    "email_verified": true, "groups": […], "name": …}, …}), so a test changes someone's groups
//    between two sign-ins; the login form is oidc-provider's development one (any password);
//  - clients register themselves (RFC 7591 dynamic registration, open), each test its own;
//  - grants are given without a consent page (a first-party provider);
//  - PKCE required, the device authorization grant and RP-initiated logout enabled;
//  - claims of the scopes go into the ID token (conformIdTokenClaims off), `groups` a scope;
//  - key rotation: POST /__test/rotate makes a new RSA signing key; the provider then signs with it
//    and publishes it first, the old one still listed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';

// One store for every provider instance (a rotation makes a new one): clients, sessions, grants.
class SharedMemoryAdapter extends MemoryAdapter {}

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const usersFile = process.env.OIDC_USERS;

function newKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: crypto.randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };
}

function readUsers() {
  return JSON.parse(fs.readFileSync(usersFile, 'utf8'));
}

function configuration(keys) {
  return {
    adapter: SharedMemoryAdapter,
    jwks: { keys },
    cookies: { keys: ['predictorx-test-provider-cookie-key'] },
    clients: [],
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      registration: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    async findAccount(ctx, id) {
      const user = readUsers()[id];
      if (!user) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...user };
        },
      };
    },
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) {
        const found = await ctx.oidc.provider.Grant.find(grantId);
        if (found) return found;
      }
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile groups offline_access');
      await grant.save();
      return grant;
    },
    ttl: {
      DeviceCode: 600,
      IdToken: 3600,
    },
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = `<!DOCTYPE html><title>Error</title><h1>oidc-provider error</h1><pre>${
        String(out.error).replace(/</g, '&lt;')}: ${String(out.error_description || '').replace(/</g, '&lt;')}</pre>`;
    },
  };
}

let keys = [newKey()];
let provider = new Provider(issuer, configuration(keys));
let handler = provider.callback();

const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/__test/rotate') {
    keys = [newKey(), ...keys];
    provider = new Provider(issuer, configuration(keys));
    handler = provider.callback();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kids: keys.map((k) => k.kid) }));
    return;
  }
  handler(req, res);
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`oidc-provider listening on ${issuer}\n`);
});
