-- Opaque access tokens (applications whose tokenType is OAUTH or DEFAULT): the token
-- itself is never stored, only its SHA-256 (hex), with what introspection answers about
-- it. `jti` is its id for revocation, as a JWT's is: revoked_tokens and refresh_families
-- name it the same way.
CREATE TABLE opaque_tokens (
    token_hash     TEXT PRIMARY KEY,
    jti            TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    username       TEXT NOT NULL,
    scope          TEXT NOT NULL,
    application_id TEXT NOT NULL,
    key_type       TEXT NOT NULL,
    issued_ms      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX opaque_tokens_expiry ON opaque_tokens (expires_at);
