-- Gateways that sync, as they last said: what an operator reads to see who is behind
-- (GET /api/am/admin/v0.14/gateways). Written when a gateway asks for changes, by any
-- control plane sharing the database.
CREATE TABLE gateways (
    id          TEXT PRIMARY KEY,
    environment TEXT NOT NULL,
    version     BIGINT NOT NULL,          -- the manifest version it holds
    last_seen   BIGINT NOT NULL           -- Unix seconds
);
