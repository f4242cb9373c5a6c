-- Gateway routes, one owner each across the whole platform: `<context>/<version>` of
-- every API, and `<context>` of a default version. Filled for existing APIs at start
-- (routes::backfill), lowest id first, as gateways used to break ties.
CREATE TABLE api_routes (
    prefix TEXT PRIMARY KEY,
    api_id TEXT NOT NULL
);
CREATE INDEX api_routes_api ON api_routes (api_id);

-- Accounts an administrator has disabled cannot log in; 0 or 1.
ALTER TABLE users ADD COLUMN disabled BIGINT NOT NULL DEFAULT 0;
