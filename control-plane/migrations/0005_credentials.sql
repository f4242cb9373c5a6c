-- Refresh tokens by family: a password grant starts a family, each refresh replaces its
-- refresh token and access token in place (one conditional UPDATE, so a refresh token is
-- redeemed once however many ask at the same time), and revoking any token of the family
-- deletes the row and revokes the access tokens it names. `spent_jti` is the access token
-- the last refresh replaced, revoked with it.
CREATE TABLE refresh_families (
    family_id   TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    username    TEXT NOT NULL,
    scope       TEXT NOT NULL,
    expires_at  BIGINT NOT NULL,
    access_jti  TEXT NOT NULL,
    access_exp  BIGINT NOT NULL,
    spent_jti   TEXT NOT NULL DEFAULT '',
    spent_exp   BIGINT NOT NULL DEFAULT 0
);
-- Refresh tokens issued before families: each is a family of its own.
INSERT INTO refresh_families (family_id, token_hash, client_id, username, scope, expires_at, access_jti, access_exp)
    SELECT token_hash, token_hash, client_id, username, scope, expires_at, access_jti, access_exp
    FROM refresh_tokens;
DROP TABLE refresh_tokens;
CREATE UNIQUE INDEX refresh_families_token ON refresh_families (token_hash);
CREATE INDEX refresh_families_access ON refresh_families (access_jti);

-- Failed logins per user name (known or not, so that a lock-out tells nothing of who
-- exists): consecutive failures since the last success, and the lock they led to.
CREATE TABLE login_failures (
    username     TEXT PRIMARY KEY,
    failures     BIGINT NOT NULL,
    locked_until BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX login_failures_updated ON login_failures (updated_at);
