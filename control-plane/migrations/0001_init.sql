-- One schema for SQLite and PostgreSQL: only TEXT and BIGINT columns, so the same
-- statements run on both through sqlx's Any driver. Timestamps are Unix seconds.

CREATE TABLE users (
    username      TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,
    roles         TEXT NOT NULL,          -- space separated: admin creator publisher subscriber
    tenant        TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

-- OAuth clients: those made by dynamic client registration (application_id NULL)
-- and the consumer keys generated for store applications.
CREATE TABLE oauth_clients (
    client_id      TEXT PRIMARY KEY,
    client_secret  TEXT NOT NULL,
    client_name    TEXT NOT NULL,
    owner          TEXT NOT NULL,
    callback_url   TEXT NOT NULL,
    grant_types    TEXT NOT NULL,         -- space separated; empty means every grant
    saas_app       BIGINT NOT NULL,
    application_id TEXT,
    key_type       TEXT,
    validity_secs  BIGINT,
    scopes         TEXT NOT NULL,
    allow_domains  TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX oauth_clients_registered_name ON oauth_clients (owner, client_name) WHERE application_id IS NULL;
CREATE UNIQUE INDEX oauth_clients_application_key ON oauth_clients (application_id, key_type);

CREATE TABLE refresh_tokens (
    token_hash  TEXT PRIMARY KEY,
    client_id   TEXT NOT NULL,
    username    TEXT NOT NULL,
    scope       TEXT NOT NULL,
    expires_at  BIGINT NOT NULL,
    access_jti  TEXT NOT NULL,            -- the access token issued with it, revoked with it
    access_exp  BIGINT NOT NULL
);

-- Access tokens are self-contained JWTs; revoking one records its id until it expires.
CREATE TABLE revoked_tokens (
    jti        TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE TABLE apis (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    provider    TEXT NOT NULL,
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    context     TEXT NOT NULL,
    status      TEXT NOT NULL,
    unique_name TEXT NOT NULL,            -- <provider with -AT->-<name>-<version>
    record      TEXT NOT NULL,            -- the API record as JSON, every field as given
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX apis_name_version ON apis (tenant, name, version);
CREATE UNIQUE INDEX apis_context_version ON apis (tenant, context, version);
CREATE UNIQUE INDEX apis_unique_name ON apis (unique_name);

CREATE TABLE applications (
    id              TEXT PRIMARY KEY,
    owner           TEXT NOT NULL,
    name            TEXT NOT NULL,
    throttling_tier TEXT NOT NULL,
    description     TEXT NOT NULL,
    callback_url    TEXT NOT NULL,
    group_id        TEXT NOT NULL,
    token_type      TEXT NOT NULL,
    status          TEXT NOT NULL,
    attributes      TEXT NOT NULL,        -- JSON object
    created_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX applications_owner_name ON applications (owner, name);

CREATE TABLE subscriptions (
    id             TEXT PRIMARY KEY,
    application_id TEXT NOT NULL REFERENCES applications (id),
    api_id         TEXT NOT NULL REFERENCES apis (id),
    tier           TEXT NOT NULL,
    status         TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX subscriptions_api_application ON subscriptions (api_id, application_id);
CREATE INDEX subscriptions_application ON subscriptions (application_id);
