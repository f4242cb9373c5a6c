-- Endpoint certificates uploaded in the publisher (`/certificates`), per tenant: an alias
-- is unique within its tenant. What the certificate says is read once at upload.
CREATE TABLE certificates (
    tenant      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    endpoint    TEXT NOT NULL,
    pem         TEXT NOT NULL,
    subject     TEXT NOT NULL,
    version     TEXT NOT NULL,
    not_before  BIGINT NOT NULL,          -- Unix seconds
    not_after   BIGINT NOT NULL,          -- Unix seconds
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant, alias)
);

-- Throttling tiers a tenant created, or WSO2 default tiers it changed (a row of a default
-- tier's name replaces the default for that tenant; the defaults themselves are in code,
-- tiers/levels.rs). `level` is the REST path's: api (subscription), application, resource.
CREATE TABLE tiers (
    tenant              TEXT NOT NULL,
    level               TEXT NOT NULL,
    name                TEXT NOT NULL,
    description         TEXT NOT NULL,
    request_count       BIGINT NOT NULL,
    unit_time           BIGINT NOT NULL,  -- milliseconds
    tier_plan           TEXT NOT NULL,    -- FREE or COMMERCIAL
    stop_on_quota_reach BIGINT NOT NULL,  -- 0 or 1
    attributes          TEXT NOT NULL,    -- JSON object of strings
    PRIMARY KEY (tenant, level, name)
);

-- Who may use a tier (`POST /tiers/update-permission`): the roles allowed, or denied. No
-- row: every role.
CREATE TABLE tier_permissions (
    tenant          TEXT NOT NULL,
    level           TEXT NOT NULL,
    name            TEXT NOT NULL,
    permission_type TEXT NOT NULL,        -- allow or deny
    roles           TEXT NOT NULL,        -- JSON array of role names
    PRIMARY KEY (tenant, level, name)
);
