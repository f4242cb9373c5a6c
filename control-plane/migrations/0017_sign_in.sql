-- Sign-in for browsers and agents: the authorization code flow (RFC 6749 §4.1 with PKCE,
-- RFC 7636), its browser sessions and the consents users gave.

-- A public client (`token_endpoint_auth_method: none`) has no secret it could keep, and may
-- only use the authorization code flow. Redirect URIs beyond `callback_url`, space separated.
ALTER TABLE oauth_clients ADD COLUMN public_client BIGINT NOT NULL DEFAULT 0;
ALTER TABLE oauth_clients ADD COLUMN redirect_uris TEXT NOT NULL DEFAULT '';

-- Codes, stored as digests: single use, bound to client, redirect URI and PKCE challenge.
-- `family` is set when the code is redeemed (the refresh-token family it started), so that
-- a second redemption revokes what the first issued. Rows outlive their expiry a while for
-- that, then go.
CREATE TABLE authorization_codes (
    code_hash      TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    username       TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    scope          TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    auth_time      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    family         TEXT
);
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);

-- Browser sessions of the sign-in pages, by the digest of their cookie.
CREATE TABLE web_sessions (
    id_hash    TEXT PRIMARY KEY,
    username   TEXT NOT NULL,
    auth_time  BIGINT NOT NULL,
    started_ms BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);

-- The scopes a user consented to give a client; asked again only for more.
CREATE TABLE oauth_consents (
    username   TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (username, client_id)
);

-- The resources (RFC 8707) a token is bound to, space separated: a refresh keeps them,
-- and an opaque token's introspection names them as `aud`.
ALTER TABLE refresh_families ADD COLUMN audience TEXT NOT NULL DEFAULT '';
ALTER TABLE opaque_tokens ADD COLUMN audience TEXT NOT NULL DEFAULT '';
